/**
 * The delivery repository on a fresh database, with the dispatcher's own claim connections, for
 * tests that drive claims and settles directly; every test starts with no events.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { openClaimConnection, type ClaimConnection } from '../../src/store/outbox/claim-connection.ts';
import { createDeliveryRepository, type DeliveryRepository } from '../../src/store/outbox/delivery-repository.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';

export interface DeliveryStoreFixture {
  db: TestDatabase;
  claims: ClaimConnection;
  deliveries: DeliveryRepository;
}

/** Registers the suite's hooks; the fields are set once beforeAll has run. */
export function deliveryStoreFixture(): DeliveryStoreFixture {
  const fixture = {} as DeliveryStoreFixture;
  beforeAll(async () => {
    fixture.db = await freshDatabase();
    fixture.claims = openClaimConnection(fixture.db.url, { logger: silentLogger });
    fixture.deliveries = createDeliveryRepository(fixture.db.pool, fixture.claims);
  });
  afterAll(async () => {
    await fixture.claims.close();
    await fixture.db.close();
  });
  beforeEach(async () => {
    await fixture.db.pool.query(sql.unsafe`TRUNCATE events CASCADE`);
  });
  return fixture;
}
