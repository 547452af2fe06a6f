// Debian's chromium (scripts/install-chromium.sh), headless, driven by
// playwright-core: the browser of the browser tests (scripts/docs_browser.mjs,
// scripts/cors_browser.mjs).
import { chromium } from "playwright-core";

/** The browser. Launched as root in a container: no sandbox; nothing that phones home. */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
