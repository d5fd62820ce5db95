import { describe, expect, it } from 'vitest';
import { parseTarget } from '../../../src/outbound/target-policy/target-url.ts';
import { expectRefused } from './test-helpers.ts';

describe('parseTarget: scheme', () => {
  it.each([
    ['file:///etc/passwd', 'file:'],
    ['gopher://127.0.0.1:6379/_INFO', 'gopher:'],
    ['ftp://127.0.0.1/', 'ftp:'],
    ['data:text/plain,hello', 'data:'],
    ['javascript:alert(1)', 'javascript:'],
    ['ws://127.0.0.1/', 'ws:'],
    ['dict://127.0.0.1:11211/stats', 'dict:'],
  ])('refuses %s', async (raw, scheme) => {
    await expectRefused(() => parseTarget(raw), new RegExp(`^scheme ${scheme} is not http or https$`));
  });

  it('accepts http and https in any case', () => {
    expect(parseTarget('HTTPS://LocalHost:8443/x').href).toBe('https://localhost:8443/x');
  });
});

describe('parseTarget: malformed and credentials', () => {
  it.each([
    'not a url',
    'http://',
    'http://a b/',
    'http://[::1/',
    'http://1.2.3.4.5/',
    'http://08.0.0.1/',
    '//127.0.0.1/',
    '127.0.0.1:3000',
  ])('refuses malformed %j', async (raw) => {
    await expectRefused(() => parseTarget(raw), /malformed|scheme .* is not http or https/);
  });

  it.each([
    'http:/127.0.0.1/',
    'http:///127.0.0.1/',
    'http:\\\\127.0.0.1\\',
    'http://127.0.0.1\n.evil.example/',
    '\thttp://127.0.0.1/',
  ])('refuses %j that WHATWG would silently repair', async (raw) => {
    await expectRefused(() => parseTarget(raw), /malformed/);
  });

  it.each([
    'http://user:pass@127.0.0.1/',
    'http://user@127.0.0.1/',
    'http://:pw@127.0.0.1/',
    'http://@127.0.0.1/',
    'http://localhost@169.254.169.254/',
  ])('refuses credentials in %s', async (raw) => {
    await expectRefused(() => parseTarget(raw), /carries credentials \(user:pass@\)/);
  });

  it('drops the fragment, which never goes on the wire', () => {
    expect(parseTarget('http://127.0.0.1:3000/cb?x=1#frag').href).toBe('http://127.0.0.1:3000/cb?x=1');
  });
});

describe('parseTarget: host spellings after URL parsing', () => {
  // The policy decides on these; this pins what arrives from the URL layer.
  it.each([
    ['http://2852039166/', '169.254.169.254'],
    ['http://0251.0376.0251.0376/', '169.254.169.254'],
    ['http://0xa9fea9fe/', '169.254.169.254'],
    ['http://0xa9.0xfe.0xa9.0xfe/', '169.254.169.254'],
    ['http://[::ffff:169.254.169.254]/', '[::ffff:a9fe:a9fe]'],
    ['http://LOCALHOST./', 'localhost.'],
  ])('%s has hostname %s', (raw, hostname) => {
    expect(parseTarget(raw).hostname).toBe(hostname);
  });
});
