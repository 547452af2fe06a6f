// A caller's flow through the TypeScript client generated from openapi.yaml:
// openapi-typescript makes the types (.local/clients/typescript/schema.d.ts,
// never committed), openapi-fetch makes the calls. `make clients` only
// type-checks this file (tsc, strict): a change to the document that breaks
// what a caller writes, or loosens what it may send, fails there.
import createClient from "openapi-fetch";
import type { components, paths } from "petstore-api";

type Schemas = components["schemas"];
type Status = Schemas["Pet"]["status"];
type ErrorCode = Schemas["Error"]["code"];

export async function flow(baseUrl: string, apiKey: string): Promise<ErrorCode | undefined> {
  const api = createClient<paths>({
    baseUrl,
    headers: { "X-API-Key": apiKey },
    // `ids=12,7,40`, as the document's `style: form, explode: false` says.
    querySerializer: { array: { style: "form", explode: false } },
  });

  const category = await api.POST("/categories", { body: { name: "Dogs", description: "Loyal" } });
  if (!category.data) return category.error.code;
  // Ids and a pet's status are always sent: typed `number`, not `number | undefined`.
  const categoryId: number = category.data.id;

  const pet = await api.POST("/pets", { body: { name: "Rex", categoryId } });
  if (!pet.data) return pet.error.code;
  const petId: number = pet.data.id;

  // A JSON merge patch: any subset of fields, and `status: null` back to the default.
  const patched = await api.PATCH("/pets/{petId}", {
    params: { path: { petId } },
    body: { name: "Rex II", status: "pending" },
  });
  if (patched.data?.status !== "pending") return patched.error?.code;
  const reset = await api.PATCH("/pets/{petId}", { params: { path: { petId } }, body: { status: null } });
  if (!reset.data) return reset.error.code;
  const status: Status = reset.data.status;
  // Updating safely (1.3.0): the answer's ETag, sent back in If-Match; a stale one is 412.
  const etag = reset.response.headers.get("ETag") ?? "";
  const stale = await api.PATCH("/pets/{petId}", {
    params: { path: { petId }, header: { "If-Match": '"stale"' } },
    body: { name: "Rex III" },
  });
  if (stale.response.status !== 412 || stale.error?.code !== "PRECONDITION_FAILED") return stale.error?.code;
  const same = await api.PATCH("/pets/{petId}", {
    params: { path: { petId }, header: { "If-Match": etag } },
    body: { name: "Rex II" },
  });
  if (!same.data) return same.error.code;

  // @ts-expect-error: a status outside the enum is no valid patch.
  await api.PATCH("/pets/{petId}", { params: { path: { petId } }, body: { status: "lost" } });
  // @ts-expect-error: a pet needs a categoryId.
  await api.POST("/pets", { body: { name: "Nameless" } });

  const listed = await api.GET("/pets", { params: { query: { ids: [petId], status } } });
  const names: string[] = (listed.data ?? []).map((p) => p.name);

  const stock = await api.PUT("/store/inventory/{petId}", { params: { path: { petId } }, body: { quantity: 5 } });
  const quantity: number | undefined = stock.data?.quantity;

  const order = await api.POST("/store/orders", { body: { petId, quantity: 2 } });
  if (!order.data?.id) return order.error?.code;
  const orderId = order.data.id;
  const completed = await api.PATCH("/store/orders/{orderId}", {
    params: { path: { orderId } },
    body: { complete: true },
  });
  const shipDate: string | undefined = completed.data?.shipDate;

  const cancelled = await api.DELETE("/store/orders/{orderId}", { params: { path: { orderId } } });
  // Every error answer is the Error record: a typed code, a message, the status.
  const problem: Schemas["Error"] | undefined = cancelled.error;
  if (problem && problem.code === "ORDER_COMPLETE" && problem.status === 409) {
    console.log(`${names.join(",")} stock ${quantity} shipped ${shipDate}: ${problem.message}`);
  }
  return problem?.code;
}
