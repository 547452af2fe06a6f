// GET /docs in a real headless browser (Debian's chromium, driven by
// playwright-core): run by scripts/docs-browser.sh against a local stack.
//
//   node scripts/docs_browser.mjs BASE_URL API_KEY SCREENSHOT
//
// The page must list every operation (the stack holds one pet, Rex) of the document, show x-roles, x-beta
// and the deprecated marker, take the key, and "try" GET /pets to a rendered
// 200 with its rate-limit headers, with no failed or 4xx/5xx request, no
// request to another origin, no CSP violation and no console error. Two
// controls then show those detectors fire: the same page under a CSP that
// blocks its scripts, and with a stylesheet that answers 404.
import { launchChromium } from "./chromium.mjs";

const [baseUrl, apiKey, screenshot] = process.argv.slice(2);
if (!baseUrl || !apiKey || !screenshot) {
  console.error("usage: node scripts/docs_browser.mjs BASE_URL API_KEY SCREENSHOT");
  process.exit(2);
}
const origin = new URL(baseUrl).origin;
const TIMEOUT_MS = 30_000;

const browser = await launchChromium();

/** A fresh page (fresh profile) whose every problem lands in `problems`. */
async function watchedPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT_MS);
  const problems = [];
  // Runs before the page's scripts, outside its CSP.
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"}`),
    );
  });
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console error: ${msg.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.protocol !== "data:" && url.origin !== origin) {
      problems.push(`request to another origin: ${request.url()}`);
    }
  });
  page.on("requestfailed", (request) =>
    problems.push(`request failed: ${request.url()} (${request.failure()?.errorText})`),
  );
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} for ${response.url()}`);
  });
  return { context, page, problems };
}

/** Every operation of the document the page renders, as Swagger UI ids it. */
async function documentedOperations() {
  const response = await fetch(`${baseUrl}/openapi.json`);
  if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
  const document = await response.json();
  const operations = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      operations.push({ method, path, id: `operations-${operation.tags[0]}-${operation.operationId}`, operation });
    }
  }
  return operations;
}

function check(condition, message, failures) {
  if (!condition) failures.push(message);
}

async function checkListing(page, operations, failures) {
  for (const { method, path, id, operation } of operations) {
    const block = page.locator(`[id="${id}"]`);
    if ((await block.count()) !== 1) {
      failures.push(`${method.toUpperCase()} ${path} is not listed (#${id})`);
      continue;
    }
    const shownPath = await block.locator(".opblock-summary [data-path]").getAttribute("data-path");
    check(shownPath === path, `#${id} shows path ${shownPath}, not ${path}`, failures);
    const shownMethod = await block.locator(".opblock-summary-method").innerText();
    check(shownMethod === method.toUpperCase(), `#${id} shows method ${shownMethod}`, failures);
    // Swagger UI greys a deprecated operation out and strikes its path through.
    const classes = (await block.getAttribute("class")) ?? "";
    const marked = classes.includes("opblock-deprecated");
    check(marked === Boolean(operation.deprecated), `#${id}: deprecated is ${operation.deprecated}, marked ${marked}`, failures);
  }
}

/** Opens an operation and returns the text of its extensions table. */
async function extensionsOf(page, id) {
  const block = page.locator(`[id="${id}"]`);
  await block.locator(".opblock-summary").first().click();
  const table = block.locator(".opblock-body").getByText("x-roles").first();
  await table.waitFor();
  return block.locator(".opblock-body").innerText();
}

async function authorize(page) {
  await page.locator(".auth-wrapper button.authorize").click();
  const modal = page.locator(".modal-ux");
  await modal.locator("input").first().fill(apiKey);
  await modal.locator("button.authorize").click();
  await modal.locator("button.btn-done").click();
}

async function tryListPets(page, failures) {
  const block = page.locator(`[id="operations-Pets-listPets"]`);
  await block.locator(".try-out__btn").click();
  // Swagger UI fills `ids` with the document's example (12,7,40): remove
  // those items, to list every pet.
  const removeId = block.locator('tr[data-param-name="ids"] button.json-schema-form-item-remove');
  while ((await removeId.count()) > 0) await removeId.first().click();
  await block.locator("button.execute").click();
  const status = block.locator(".live-responses-table .response .response-col_status").first();
  await status.waitFor();
  const shown = (await status.innerText()).trim();
  check(shown === "200", `GET /pets tried: the page shows status ${shown}, not 200`, failures);
  const answer = await block.locator(".live-responses-table").first().innerText();
  if (process.env.DOCS_BROWSER_DEBUG) console.error(await block.locator(".request-url").innerText());
  if (process.env.DOCS_BROWSER_DEBUG) console.error(answer);
  for (const header of ["x-ratelimit-limit", "x-ratelimit-remaining", "ratelimit-policy", "x-request-id"]) {
    check(answer.toLowerCase().includes(header), `GET /pets tried: header ${header} is not shown`, failures);
  }
  check(answer.includes('"name": "Rex"'), "GET /pets tried: the seeded pet is not in the body shown", failures);
}

async function theRealPage(operations) {
  const { context, page, problems } = await watchedPage();
  const failures = [];
  try {
    await page.goto(`${baseUrl}/docs`);
    await page.locator(".opblock").first().waitFor();
    await checkListing(page, operations, failures);
    const listPets = await extensionsOf(page, "operations-Pets-listPets");
    check(/x-roles[\s\S]*customer[\s\S]*staff/.test(listPets), "GET /pets: x-roles not shown", failures);
    const beta = operations.find(({ operation }) => operation["x-beta"]);
    if (beta) {
      const shown = await extensionsOf(page, beta.id);
      check(/x-beta\s*true/.test(shown), `${beta.id}: x-beta not shown`, failures);
      await page.locator(`[id="${beta.id}"] .opblock-summary`).first().click();
    }
    await authorize(page);
    await tryListPets(page, failures);
    await page.locator(`[id="operations-Pets-listPets"]`).scrollIntoViewIfNeeded();
  } catch (error) {
    // A step that timed out: what the page reported says why.
    failures.push(error.message.split("\n")[0]);
  }
  await page.screenshot({ path: screenshot });
  await context.close();
  return [...failures, ...problems];
}

/** The page as served, but with `change` applied to one of its answers. */
async function aBrokenPage(name, pattern, change) {
  const { context, page, problems } = await watchedPage();
  await page.route(pattern, async (route) => route.fulfill(change(await route.fetch())));
  await page.goto(`${baseUrl}/docs`);
  await page.waitForLoadState("networkidle");
  await context.close();
  return problems.length > 0 ? [] : [`control "${name}": the broken page raised no problem`];
}

let failures;
try {
  const operations = await documentedOperations();
  failures = await theRealPage(operations);
  failures.push(
    ...(await aBrokenPage("CSP blocks scripts", `${baseUrl}/docs`, (response) => ({
      response,
      headers: { ...response.headers(), "content-security-policy": "default-src 'self'; script-src 'none'" },
    }))),
    ...(await aBrokenPage("stylesheet 404", "**/docs/assets/swagger-ui.*.css", () => ({
      status: 404,
      contentType: "application/json",
      body: '{"code":"NOT_FOUND","message":"gone","status":404}',
    }))),
  );
  if (failures.length === 0) {
    console.error(`docs-browser: ${operations.length} operations listed, GET /pets tried (200), no problem; controls fire`);
  }
} catch (error) {
  failures = [`${error.message}`];
} finally {
  await browser.close();
}
if (failures.length > 0) {
  console.error(`docs-browser: ${baseUrl}/docs failed:\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
