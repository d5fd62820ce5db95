export type DiffLine =
  | { kind: 'same'; text: string; a: number; b: number }
  | { kind: 'removed'; text: string; a: number }
  | { kind: 'added'; text: string; b: number };

// The LCS table is (n+1)*(m+1) cells; past this the diff falls back to a plain replace.
const MAX_CELLS = 4_000_000;

/**
 * Line diff by longest common subsequence, after trimming the common head and tail (payloads of
 * one event type usually differ in a few lines, so the table stays small).
 */
export function diffLines(aText: string, bText: string): DiffLine[] {
  const a = aText.split('\n');
  const b = bText.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const out: DiffLine[] = [];
  for (let i = 0; i < head; i++) out.push({ kind: 'same', text: a[i] ?? '', a: i + 1, b: i + 1 });
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const n = am.length;
  const m = bm.length;
  if ((n + 1) * (m + 1) > MAX_CELLS) {
    am.forEach((text, i) => out.push({ kind: 'removed', text, a: head + i + 1 }));
    bm.forEach((text, j) => out.push({ kind: 'added', text, b: head + j + 1 }));
  } else {
    const width = m + 1;
    const lcs = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * width + j] =
          am[i] === bm[j]
            ? (lcs[(i + 1) * width + j + 1] ?? 0) + 1
            : Math.max(lcs[(i + 1) * width + j] ?? 0, lcs[i * width + j + 1] ?? 0);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        out.push({ kind: 'same', text: am[i] ?? '', a: head + i + 1, b: head + j + 1 });
        i++;
        j++;
      } else if (i < n && (j === m || (lcs[(i + 1) * width + j] ?? 0) >= (lcs[i * width + j + 1] ?? 0))) {
        // On a tie the removal goes first, as unified diffs show it.
        out.push({ kind: 'removed', text: am[i] ?? '', a: head + i + 1 });
        i++;
      } else {
        out.push({ kind: 'added', text: bm[j] ?? '', b: head + j + 1 });
        j++;
      }
    }
  }
  for (let k = tail; k > 0; k--) {
    out.push({ kind: 'same', text: a[a.length - k] ?? '', a: a.length - k + 1, b: b.length - k + 1 });
  }
  return out;
}
