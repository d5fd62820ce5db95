import { describe, expect, it } from 'vitest';
import { closestNames, didYouMean, editDistance } from '../../src/shared/did-you-mean.ts';

describe('did you mean', () => {
  it('counts inserts, deletes, substitutions and a swap of neighbours as one edit each', () => {
    expect(editDistance('serve', 'serve')).toBe(0);
    expect(editDistance('serv', 'serve')).toBe(1);
    expect(editDistance('twillio', 'twilio')).toBe(1);
    expect(editDistance('sevre', 'serve')).toBe(1);
    expect(editDistance('stirpe', 'stripe')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('names the nearest candidates when a third of the word or less differs, ignoring case', () => {
    expect(closestNames('twillio', ['stripe', 'twilio', 'twitch'])).toEqual(['twilio']);
    expect(closestNames('GitHub', ['github', 'gitlab'])).toEqual(['github']);
    expect(closestNames('zebra', ['serve', 'token', 'data'])).toEqual([]);
    // One edit is always allowed, even for a short word; two are not.
    expect(closestNames('ap', ['api', 'mcp'])).toEqual(['api']);
    expect(closestNames('xy', ['api'])).toEqual([]);
    // Ties are all named, in the candidates' order.
    expect(closestNames('mod', ['mode', 'mood', 'model'])).toEqual(['mode', 'mood']);
  });

  it('says it as a question, or not at all', () => {
    expect(didYouMean('serv', ['serve', 'token'])).toBe('did you mean "serve"?');
    expect(didYouMean('mod', ['mode', 'mood', 'mods'])).toBe('did you mean "mode", "mood" or "mods"?');
    expect(didYouMean('zebra', ['serve'])).toBe('');
  });
});
