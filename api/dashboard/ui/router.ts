// Pages are addressed by the URL's fragment (#/commands/<id>), so a reload or a shared link opens the
// same page and the server serves one page for all of them.
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  page: 'commands' | 'command' | 'new' | 'files' | 'webhook';
  id: string | null;
  query: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const [path, search = ''] = hash.replace(/^#\/?/, '').split('?', 2);
  const [first, second] = path.split('/');
  const query = new URLSearchParams(search);
  if (first === 'commands' && second) return { page: 'command', id: decodeURIComponent(second), query };
  if (first === 'new' || first === 'files' || first === 'webhook') return { page: first, id: null, query };
  return { page: 'commands', id: null, query };
}

export function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return parseRoute(hash);
}

export const go = (hash: string) => {
  location.hash = hash;
};
