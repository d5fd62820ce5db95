/**
 * The pure checks of every catalog case (describeProvider): a case file is run by being here, with
 * no test file of its own. Checks particular to one provider live in `<preset>.test.ts`.
 */
import { ALL_CASES } from './all-cases.ts';
import { describeProvider } from './provider-case.ts';

for (const c of ALL_CASES) describeProvider(c);
