/**
 * A lingering close, as nginx makes one. An answer written before the request's body has arrived
 * (a 413) is followed by closing the connection; if the socket is destroyed while the client is
 * still sending, the kernel answers the next bytes with a reset, and a reset can throw away the
 * answer before the client reads it: Node's fetch then reports EPIPE instead of the 413.
 *
 * So once the answer is written, the write side is shut (FIN) and whatever the client still sends
 * is read and dropped, up to LINGER_LIMITS, before the socket is destroyed: the client has time to
 * see the answer and stop, and a client that never stops costs at most the bounds.
 */
import type { IncomingMessage } from 'node:http';

const LINGER_LIMITS = {
  /** The longest a closing connection keeps reading after its answer. */
  ms: 5_000,
  /** The most it reads and drops before giving up on the client. */
  bytes: 64 * 1024 * 1024,
} as const;

/**
 * Makes the coming close of this request's connection a lingering one. Node closes a connection
 * whose answer says `Connection: close` through `socket.destroySoon()` once the answer is
 * written; that call is replaced on this socket alone. A request already read to its end closes
 * as usual.
 */
export function lingerOnClose(req: IncomingMessage, limits: { ms: number; bytes: number } = LINGER_LIMITS): void {
  if (req.complete) return;
  const socket = req.socket;
  socket.destroySoon = function lingeringClose(): void {
    let read = 0;
    const stop = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.destroy();
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > limits.bytes) stop();
    };
    const timer = setTimeout(stop, limits.ms);
    timer.unref();
    socket.on('data', onData);
    socket.once('end', stop);
    socket.once('close', () => clearTimeout(timer));
    // The answer goes out first, then the FIN; reading goes on (the body may have been paused).
    socket.end();
    req.resume();
    socket.resume();
  };
}
