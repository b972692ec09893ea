/**
 * Closing idle keep-alive connections without resetting a request already sent on one.
 *
 * Node's HTTP server closes a keep-alive connection that has been idle for its keep-alive
 * timeout (plus a second) by destroying the socket from a timer. Timers run before the event
 * loop reads its sockets, so when the loop has been away longer than that — a gateway starved
 * of CPU, or one turn of its loop spent answering hundreds of requests — a request the client
 * sent meanwhile is still unread in the socket, and closing a socket with unread data makes the
 * kernel answer with a reset: the client gets ECONNRESET, no status and no error body (566
 * requests of the hour-long split-pair soak, docs/reliability.md). Handling the server's
 * 'timeout' event makes Node leave the socket alone; the decision is taken one turn of the loop
 * later, once the loop has read its sockets: a connection that received bytes meanwhile carries
 * a request, which is served (a slow one is still bounded by headersTimeout and
 * requestTimeout); one that did not is idle and is closed as Node would have closed it.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export function closeIdleWithoutReset(server: Server): void {
  server.on('timeout', (socket: Socket) => {
    const read = socket.bytesRead;
    setImmediate(() => {
      if (!socket.destroyed && socket.bytesRead === read) socket.destroy();
    });
  });
}
