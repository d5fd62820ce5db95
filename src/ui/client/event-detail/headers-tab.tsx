import type { JSX } from 'preact';
import type { EventDetail } from '../../../../generated/types.ts';
import { CopyButton } from '../components/copy-button.tsx';
import { Table } from '../components/page.tsx';

export function HeadersTab({ event }: { event: EventDetail }): JSX.Element {
  const entries = Object.entries(event.headers).sort(([a], [b]) => a.localeCompare(b));
  return (
    <div class="tab-body">
      <div class="tab-toolbar">
        <span class="muted">{`${entries.length} header${entries.length === 1 ? '' : 's'}, secrets redacted`}</span>
        <CopyButton text={() => JSON.stringify(event.headers, null, 2)} label="Copy headers as JSON" />
      </div>
      {entries.length === 0 ? (
        <p class="muted">No headers stored (queue message).</p>
      ) : (
        <Table class="table headers-table" label="Request headers">
          {entries.map(([name, value]) => (
            <tr key={name}>
              <th scope="row" class="mono">
                {name}
              </th>
              <td class={`mono${value === '[redacted]' ? ' muted' : ''}`}>
                {Array.isArray(value) ? value.join('\n') : (value ?? '')}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </div>
  );
}
