import { describe, expect, it } from 'vitest';
import { SCHEMAS } from '../../generated/schemas.ts';
import { DEFAULT_RETENTION_INTERVAL_SECONDS } from '../../src/store/retention.ts';

describe('config schema defaults', () => {
  it('documents the retention interval the job really uses when none is configured', () => {
    const interval = SCHEMAS.SwitchboardConfig.properties.retention.properties.interval_seconds;
    expect(interval.default).toBe(DEFAULT_RETENTION_INTERVAL_SECONDS);
    expect(interval.description).toContain(String(DEFAULT_RETENTION_INTERVAL_SECONDS));
  });
});
