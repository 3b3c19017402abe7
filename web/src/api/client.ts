// The API client: generated types (schema.d.ts, from /api/openapi.json) and
// openapi-fetch. Every request carries the session's bearer token; a 401
// ends the session and returns to the login page.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";
import { clearToken, getToken } from "../auth/session";

export type Schemas = components["schemas"];

export class ApiError extends Error {
  status: number;
  code: string;
  field: string | null;
  /** The whole error body: `problems` of an invalid definition, `status` of a conflict … */
  body: Record<string, unknown>;
  constructor(status: number, code: string, message: string, field: string | null, body: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
    this.body = body;
  }
}

const auth: Middleware = {
  onRequest({ request }) {
    const token = getToken();
    if (token) request.headers.set("Authorization", `Bearer ${token}`);
    return request;
  },
  onResponse({ response, request }) {
    if (response.status === 401 && !request.url.includes("/api/workflows/console/session")) {
      clearToken();
      if (!window.location.pathname.startsWith("/login")) {
        window.location.assign("/login?expired=1");
      }
    }
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use(auth);

type Result<T> = { data?: T; error?: unknown; response: Response };

function toApiError(error: unknown, response: Response): ApiError {
  const body = (error ?? {}) as { code?: string; message?: string; field?: string | null };
  return new ApiError(
    response.status,
    body.code ?? `http_${response.status}`,
    body.message ?? response.statusText,
    body.field ?? null,
    (error ?? {}) as Record<string, unknown>,
  );
}

/** The response's data, or an ApiError carrying its code, message and field. */
export async function unwrap<T>(call: Promise<Result<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw toApiError(error, response);
  return data as T;
}

/** A binary download with the session's token (attachments, diagnostic bundles). */
export async function download(path: string, fallbackName: string): Promise<void> {
  const response = await fetch(path, { headers: { Authorization: `Bearer ${getToken() ?? ""}` } });
  if (!response.ok) {
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    throw toApiError(body, response);
  }
  const disposition = response.headers.get("Content-Disposition") ?? "";
  const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
  const name = match ? decodeURIComponent(match[1]) : fallbackName;
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  URL.revokeObjectURL(url);
}
