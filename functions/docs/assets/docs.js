// The API reference page's own script (a file, as the page's
// Content-Security-Policy allows no inline script): renders the document this
// server serves with Swagger UI (swagger-ui-bundle.js, loaded before).
"use strict";

(async function render() {
  const root = document.getElementById("swagger-ui");
  // "/" from "/docs" (or "/stage/" under a stage prefix).
  const base = new URL(".", document.baseURI);
  try {
    const response = await fetch(new URL("openapi.json", base));
    if (!response.ok) {
      throw new Error(`GET openapi.json answered ${response.status}`);
    }
    const spec = await response.json();
    // "Try it out" calls the server that served this page: the document's own
    // servers (127.0.0.1:3000, the execute-api URL template) are other
    // origins, which the page's Content-Security-Policy refuses to reach.
    spec.servers = [{ url: base.href.replace(/\/$/, ""), description: "This server" }];
    window.ui = SwaggerUIBundle({
      spec,
      domNode: root,
      deepLinking: true,
      // x-roles and x-beta on every operation.
      showExtensions: true,
      showCommonExtensions: true,
      displayRequestDuration: true,
      // No request leaves for validator.swagger.io.
      validatorUrl: null,
    });
  } catch (error) {
    root.textContent = `The API reference could not load the OpenAPI document: ${error.message}`;
    console.error(error);
  }
})();
