import { h, type JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiClient, ApiError } from './api-client.ts';

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
      setError(
        err instanceof ApiError && err.status === 401
          ? 'That token was not accepted. Check it, or create one with the command below.'
          : err instanceof ApiError
            ? `Could not sign in: ${err.message}`
            : 'Could not sign in.',
      );
    } finally {
      setBusy(false);
    }
  };

  return h(
    'main',
    { class: 'signin' },
    h(
      'form',
      { class: 'signin-card', onSubmit: submit, 'aria-labelledby': 'signin-title' },
      h(
        'div',
        { class: 'brand brand-large' },
        h('span', { class: 'brand-mark', 'aria-hidden': 'true' }),
        'switchboard',
      ),
      h('h1', { id: 'signin-title' }, 'Sign in'),
      notice ? h('p', { class: 'notice', role: 'status' }, notice) : null,
      h('label', { for: 'token' }, 'API token'),
      h('input', {
        id: 'token',
        name: 'token',
        type: 'password',
        autocomplete: 'off',
        spellcheck: false,
        autofocus: true,
        value: token,
        placeholder: 'Paste your token',
        onInput: (e: Event) => setToken((e.currentTarget as HTMLInputElement).value),
        'aria-invalid': error ? 'true' : undefined,
        'aria-describedby': error ? 'signin-error token-hint' : 'token-hint',
      }),
      error ? h('p', { id: 'signin-error', class: 'form-error', role: 'alert' }, error) : null,
      h(
        'button',
        { type: 'submit', class: 'btn btn-primary btn-block', disabled: busy },
        busy ? 'Checking…' : 'Sign in',
      ),
      h(
        'p',
        { id: 'token-hint', class: 'hint' },
        'Create a token with ',
        h('code', null, 'npx switchboard token create <name>'),
        '. It is kept in this tab only (sessionStorage) and sent as a bearer header; no cookies.',
      ),
    ),
  );
}
