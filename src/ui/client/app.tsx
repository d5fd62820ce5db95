import type { JSX } from 'preact';
import { useCallback, useState } from 'preact/hooks';
import { Shell } from './shell/shell.tsx';
import { SignIn } from './sign-in/sign-in.tsx';
import { clearToken, readToken, saveToken } from './token-store.ts';

/** Sign-in until a token is accepted, then the Shell; a rejected token brings the sign-in back. */
export function App(): JSX.Element {
  const [token, setToken] = useState<string | null>(() => readToken());
  const [notice, setNotice] = useState<string | null>(null);
  const signOut = useCallback((message: string | null) => {
    clearToken();
    setNotice(message);
    setToken(null);
  }, []);
  if (!token) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(t) => {
          saveToken(t);
          setNotice(null);
          setToken(t);
        }}
      />
    );
  }
  return <Shell token={token} onSignOut={signOut} />;
}
