// A list page's filters and open drawer live in the URL: set one parameter
// (a value, several values, or none to remove it) and keep the others.
import { useSearchParams } from "react-router-dom";

export function useSetParam() {
  const [params, setParams] = useSearchParams();
  return (name: string, value: string | readonly string[] | null | undefined) => {
    const next = new URLSearchParams(params);
    next.delete(name);
    for (const v of typeof value === "string" ? [value] : (value ?? [])) if (v) next.append(name, v);
    setParams(next);
  };
}
