import type { JSX } from 'preact';

export type IconName =
  'shield-check' | 'shield-x' | 'shield' | 'key' | 'globe' | 'inbox' | 'copy' | 'download' | 'send' | 'x' | 'diff';

// 24x24 stroke icons; drawn as SVG elements (not inline styles), which the CSP allows.
const PATHS: Readonly<Record<IconName, readonly string[]>> = {
  'shield-check': ['M12 3l8 3v6c0 4.5-3.4 8.3-8 9-4.6-.7-8-4.5-8-9V6l8-3z', 'M8.5 12.2l2.4 2.4 4.6-4.8'],
  'shield-x': ['M12 3l8 3v6c0 4.5-3.4 8.3-8 9-4.6-.7-8-4.5-8-9V6l8-3z', 'M9.5 9.5l5 5M14.5 9.5l-5 5'],
  shield: ['M12 3l8 3v6c0 4.5-3.4 8.3-8 9-4.6-.7-8-4.5-8-9V6l8-3z', 'M12 8v5M12 16h.01'],
  key: ['M14.5 9.5a4 4 0 1 1-8 0 4 4 0 0 1 8 0z', 'M13.5 12.5L20 19M17 16l2-2M19.5 18.5l1.5-1.5'],
  globe: [
    'M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z',
    'M3 12h18M12 3c2.5 2.7 3.8 5.7 3.8 9s-1.3 6.3-3.8 9c-2.5-2.7-3.8-5.7-3.8-9S9.5 5.7 12 3z',
  ],
  inbox: ['M4 13l2.5-7h11L20 13v5a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1v-5z', 'M4 13h4.5l1.5 2.5h4l1.5-2.5H20'],
  copy: ['M9 9h10v11H9z', 'M5 15V4h10'],
  download: ['M12 4v11M7.5 10.5L12 15l4.5-4.5', 'M5 19.5h14'],
  send: ['M4 12l16-8-6 16-2.5-6.5L4 12z'],
  x: ['M6 6l12 12M18 6L6 18'],
  diff: ['M7 4v10M3 8h8', 'M13 17h8', 'M17 20V10'],
};

export function Icon({ name, label }: { name: IconName; label?: string }): JSX.Element {
  return (
    <svg
      class="icon"
      viewBox="0 0 24 24"
      width={16}
      height={16}
      fill="none"
      stroke="currentColor"
      stroke-width={2}
      stroke-linecap="round"
      stroke-linejoin="round"
      aria-hidden={label ? undefined : 'true'}
      role={label ? 'img' : undefined}
      aria-label={label}
      focusable="false"
    >
      {PATHS[name].map((d) => (
        <path d={d} />
      ))}
    </svg>
  );
}
