// sessionStorage, not localStorage: the token lives as long as the tab, and never in a cookie.
const KEY = 'switchboard.token';

export function readToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function clearToken(): void {
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // storage unavailable: nothing to clear
  }
}
