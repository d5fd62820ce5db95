import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiClient, ApiError } from '../api-client.ts';
import { INSTALLED_CLI, NPX_CLI } from '../cli-command.ts';

function signInError(err: unknown): string {
  if (err instanceof ApiError && err.status === 401) {
    return 'That token was not accepted. Check it, or create one with the command below.';
  }
  return err instanceof ApiError ? `Could not sign in: ${err.message}` : 'Could not sign in.';
}

export function SignIn({
  onSignedIn,
  notice,
}: {
  onSignedIn: (token: string) => void;
  notice: string | null;
}): JSX.Element {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    const value = token.trim();
    if (!value) {
      setError('Paste a token first.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      // Checked against a cheap authenticated endpoint, so a typo fails here and not on the first list.
      await new ApiClient(value, () => undefined).config();
      onSignedIn(value);
    } catch (err) {
      setError(signInError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin">
      <form class="signin-card" onSubmit={(e) => void submit(e)} aria-labelledby="signin-title">
        <div class="brand brand-large">
          <span class="brand-mark" aria-hidden="true" />
          switchboard
        </div>
        <h1 id="signin-title">Sign in</h1>
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          autofocus
          value={token}
          placeholder="Paste your token"
          onInput={(e) => setToken(e.currentTarget.value)}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? 'signin-error token-hint' : 'token-hint'}
        />
        {error ? (
          <p id="signin-error" class="form-error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        <p id="token-hint" class="hint" data-testid="token-hint">
          The first start saved a token in <code>.switchboard/token</code> (in <code>SWITCHBOARD_DATA_DIR</code> when
          set), beside where the server runs. Create another with <code>{`${INSTALLED_CLI} token create <name>`}</code>,
          or <code>{`${NPX_CLI} token create <name>`}</code> where the package is not installed; it works while the
          server runs. The token is kept in this tab only (sessionStorage) and sent as a bearer header; no cookies.
        </p>
      </form>
    </main>
  );
}
