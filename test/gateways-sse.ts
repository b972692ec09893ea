/** Reads a server-sent-events response with eventsource-parser (what TGI/KServe clients do). */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export async function readSse(res: Response): Promise<EventSourceMessage[]> {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e) });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
    parser.feed(decoder.decode(chunk, { stream: true }));
  return events;
}

export async function postSse(
  url: string,
  body: unknown,
): Promise<{ status: number; contentType: string; events: EventSourceMessage[] }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    events: await readSse(res),
  };
}
