// Browsers on other origins (contract section 7) in a real headless browser:
// run by scripts/cors-browser.sh against a local stack whose ALLOWED_ORIGINS
// lists http://127.0.0.1:LISTED_PORT and nothing else.
//
//   node scripts/cors_browser.mjs BASE_URL API_KEY ONE_A_MINUTE_KEY LISTED_PORT OTHER_PORT
//
// This script serves a blank page on both ports (two origins, neither the
// API's) and calls the API from each page with fetch, as a web app would:
// - from the listed origin, keyed reads (preflighted: X-API-Key is no simple
//   header) answer 200 and the page reads the rate-limit headers and
//   X-Request-Id; preflights are not counted (two reads, one apart); a keyed
//   JSON POST with Idempotency-Key is allowed and its replay readable as
//   such; the created record's ETag is readable, a PUT with a stale If-Match
//   reads as 412, one with that ETag succeeds, and a GET with the new ETag
//   in If-None-Match reads as 304 (contract 4c: the two request headers are
//   allowed, ETag exposed); a 429 shows its Retry-After and a 401 its status;
// - from the other origin, the same calls fail (fetch rejects), the simple
//   keyless read included.
// A control shows the page sees only what the API exposes: Vary, which the
// API sends (this script sees it, outside any browser), stays hidden from it.
import http from "node:http";
import { launchChromium } from "./chromium.mjs";

const [baseUrl, apiKey, oneAMinuteKey, listedPort, otherPort] = process.argv.slice(2);
if (!otherPort) {
  console.error("usage: node scripts/cors_browser.mjs BASE_URL API_KEY ONE_A_MINUTE_KEY LISTED_PORT OTHER_PORT");
  process.exit(2);
}
const TIMEOUT_MS = 30_000;
const RATE_LIMIT_HEADERS = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit"];

/** A blank page on 127.0.0.1:port: an origin of its own. */
function servePage(port) {
  const server = http.createServer((_, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end("<!doctype html><meta charset=utf-8><title>A web app on another origin</title>");
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(port), "127.0.0.1", () => resolve(server));
  });
}

/**
 * What the page on `origin` gets for each call: status and the headers it
 * can read, or the error fetch rejected with. Runs in the page.
 */
function callsFromPage(page) {
  return page.evaluate(
    async ({ baseUrl, apiKey, oneAMinuteKey }) => {
      const call = async (path, init = {}) => {
        try {
          const response = await fetch(`${baseUrl}${path}`, init);
          return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
        } catch (error) {
          return { error: String(error) };
        }
      };
      const keyed = { headers: { "X-API-Key": apiKey } };
      const create = {
        method: "POST",
        headers: { "X-API-Key": apiKey, "Content-Type": "application/json", "Idempotency-Key": `cors-${Date.now()}` },
        body: JSON.stringify({ name: "Birds" }),
      };
      const limited = { headers: { "X-API-Key": oneAMinuteKey } };
      const replace = (ifMatch) => ({
        method: "PUT",
        headers: { "X-API-Key": apiKey, "Content-Type": "application/json", "If-Match": ifMatch },
        body: JSON.stringify({ name: "Birds", description: "Feathered" }),
      });
      // Different URLs: each is preflighted afresh (the preflight cache is per URL).
      const firstRead = await call("/pets?limit=1", keyed);
      const secondRead = await call("/pets?limit=2", keyed);
      const created = await call("/categories", create);
      const replayed = await call("/categories", create);
      const id = created.status === 201 ? JSON.parse(created.body).id : 0;
      const stale = await call(`/categories/${id}`, replace('"stale"'));
      const current = await call(`/categories/${id}`, replace(created.headers?.etag ?? '"none"'));
      const revalidate = { headers: { "X-API-Key": apiKey, "If-None-Match": current.headers?.etag ?? '"none"' } };
      const revalidated = await call(`/categories/${id}`, revalidate);
      return {
        firstRead,
        secondRead,
        created,
        replayed,
        stale,
        current,
        revalidated,
        admitted: await call("/categories?limit=1", limited),
        refused: await call("/categories?limit=2", limited),
        keyless: await call("/pets"),
      };
    },
    { baseUrl, apiKey, oneAMinuteKey },
  );
}

const failures = [];
function check(condition, message) {
  if (!condition) failures.push(message);
}

function checkListedOrigin(calls) {
  for (const [name, result] of Object.entries(calls)) {
    check(!result.error, `listed origin, ${name}: fetch failed: ${result.error}`);
  }
  if (failures.length > 0) return;
  const { firstRead, secondRead, created, replayed, stale, current, revalidated, admitted, refused, keyless } = calls;
  check(firstRead.status === 200, `listed origin: GET /pets answered ${firstRead.status}: ${firstRead.body}`);
  for (const header of [...RATE_LIMIT_HEADERS, "x-request-id"]) {
    check(firstRead.headers[header] !== undefined, `listed origin: the page cannot read ${header} (it reads ${Object.keys(firstRead.headers)})`);
  }
  const first = Number(firstRead.headers["x-ratelimit-remaining"]);
  const second = Number(secondRead.headers["x-ratelimit-remaining"]);
  check(second === first - 1, `listed origin: remaining went ${first} -> ${second} over two preflighted reads (preflights must not count)`);
  check(created.status === 201, `listed origin: POST /categories (JSON, Idempotency-Key) answered ${created.status}: ${created.body}`);
  check(replayed.status === 201 && replayed.headers["idempotent-replayed"] === "true",
    `listed origin: the retried POST answered ${replayed.status} with Idempotent-Replayed ${replayed.headers["idempotent-replayed"]}`);
  check(created.headers.etag !== undefined, `listed origin: the page cannot read the created record's ETag`);
  check(stale.status === 412, `listed origin: PUT with a stale If-Match answered ${stale.status}: ${stale.body}`);
  check(current.status === 200 && current.headers.etag !== undefined && current.headers.etag !== created.headers.etag,
    `listed origin: PUT with the record's ETag answered ${current.status}, ETag ${current.headers.etag}`);
  check(revalidated.status === 304, `listed origin: GET with If-None-Match of the current ETag answered ${revalidated.status}`);
  check(admitted.status === 200, `listed origin: the one-a-minute key's first read answered ${admitted.status}`);
  check(refused.status === 429 && refused.headers["retry-after"] !== undefined,
    `listed origin: the one-a-minute key's second read answered ${refused.status}, Retry-After ${refused.headers["retry-after"]}`);
  check(refused.headers["x-ratelimit-remaining"] === "0", `listed origin: the 429's X-RateLimit-Remaining reads ${refused.headers["x-ratelimit-remaining"]}`);
  check(keyless.status === 401 && keyless.headers["x-request-id"] !== undefined,
    `listed origin: the keyless read answered ${keyless.status}, X-Request-Id ${keyless.headers["x-request-id"]}`);
  // The control: Vary is sent, but not exposed.
  check(firstRead.headers.vary === undefined, `listed origin: the page reads Vary, which is not exposed`);
}

function checkOtherOrigin(calls) {
  for (const [name, result] of Object.entries(calls)) {
    check(result.error !== undefined, `other origin, ${name}: not blocked (status ${result.status})`);
  }
}

const servers = [await servePage(listedPort), await servePage(otherPort)];
const browser = await launchChromium();
try {
  const sent = await fetch(`${baseUrl}/pets?limit=1`, {
    headers: { "X-API-Key": apiKey, Origin: `http://127.0.0.1:${listedPort}` },
  });
  check(sent.headers.get("vary") !== null, "control: the API sends no Vary to the listed origin, so its absence in the page shows nothing");
  for (const [port, checkCalls] of [[listedPort, checkListedOrigin], [otherPort, checkOtherOrigin]]) {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(TIMEOUT_MS);
    await page.goto(`http://127.0.0.1:${port}/`);
    checkCalls(await callsFromPage(page));
    await context.close();
  }
} catch (error) {
  failures.push(error.message.split("\n")[0]);
} finally {
  await browser.close();
  for (const server of servers) server.close();
}
if (failures.length > 0) {
  console.error(`cors-browser: failed:\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.error(
  `cors-browser: from http://127.0.0.1:${listedPort} (listed) the page called the API and read its headers, preflights uncounted; ` +
    `from http://127.0.0.1:${otherPort} every call was blocked`,
);
