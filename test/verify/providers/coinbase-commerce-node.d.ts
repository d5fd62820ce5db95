// coinbase-commerce-node ships no types; only the webhook check the tests call is declared.
declare module 'coinbase-commerce-node' {
  interface Webhook {
    verifySigHeader(payload: string, signatureHeader: string, secret: string): boolean;
  }
  const coinbase: { Webhook: Webhook };
  export default coinbase;
}
