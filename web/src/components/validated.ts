import type { FormInstance } from "antd";

/**
 * The form's values when every field is valid, else null — the form then
 * shows which fields are wrong. Ant Design's `validateFields` rejects with
 * the list of errors instead; awaited bare in a submit handler, that
 * rejection escaped as an uncaught promise error in the browser console.
 */
export async function validated<T>(form: FormInstance<T>): Promise<T | null> {
  try {
    return await form.validateFields();
  } catch {
    return null;
  }
}
