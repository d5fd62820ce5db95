/**
 * Telegram bot webhooks: setWebhook's secret_token, sent as it is in X-Telegram-Bot-Api-Secret-Token
 * on every update; nothing is signed, so a changed body is not a failed check. The Bot API
 * documents it (https://core.telegram.org/bots/api#setwebhook: "A secret token to be sent in a
 * header “X-Telegram-Bot-Api-Secret-Token” in every webhook request, 1-256 characters. Only
 * characters A-Z, a-z, 0-9, _ and - are allowed."); a bot compares the header with the token it set.
 * The update is the one Telegram's webhook guide tests with (https://core.telegram.org/bots/webhooks).
 */
import { jsonDelivery, type ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

const HEADER = 'x-telegram-bot-api-secret-token';

export const telegramCase: ProviderCase = {
  preset: 'telegram',
  credential: 'token',
  secret: 'telegram_secret-Token_0123456789',
  wrongSecret: 'telegram_wrong-Token_9876543210',
  deliver: (token) => jsonDelivery(samplePayload('telegram', 'message.json'), { [HEADER]: token }),
  accepts: ({ headers }, token) => headers[HEADER] === token,
  timestamped: false,
  requiredHeader: 'X-Telegram-Bot-Api-Secret-Token',
  eventType: 'message.private',
  bodyUnsigned: true,
  proof: 'example',
};
