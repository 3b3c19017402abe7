// The session: a bearer token in localStorage, obtained from a one-time
// login code (the URL fragment of the link `flowledger run` prints) or typed
// on the login page.
const KEY = "flowledger.token";

export function getToken(): string | null {
  return window.localStorage.getItem(KEY);
}

export function setToken(token: string): void {
  window.localStorage.setItem(KEY, token);
}

export function clearToken(): void {
  window.localStorage.removeItem(KEY);
}
