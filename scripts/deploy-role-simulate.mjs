// Evaluates requests against the pipeline's deploy roles, for
// tools/gates/src/gates/deploy_role_check.py: reads {account, checks: [{principal, action,
// resource, context, identityPolicies: [document], resourcePolicy: document |
// null, boundary: document | absent}]} on stdin and writes, for each check in order, {decision: Allowed |
// ExplicitlyDenied | ImplicitlyDenied | Error, error}. A trust policy is the
// role's resource policy (the caller is GitHub's OIDC provider, with no
// identity policies of its own); a deploy role's own permissions are identity
// policies; a role the execution role creates is judged with its stage's
// permissions boundary. The simulator is @cloud-copilot/iam-simulate, as for make iam-check.

import { runSimulation } from '@cloud-copilot/iam-simulate'

const input = JSON.parse(await new Promise((resolve) => {
  let text = ''
  process.stdin.on('data', (chunk) => { text += chunk })
  process.stdin.on('end', () => resolve(text))
}))

const results = []
for (const check of input.checks) {
  const response = await runSimulation({
    identityPolicies: check.identityPolicies.map((policy, i) => ({ name: `policy${i}`, policy })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: check.resourcePolicy ?? undefined,
    permissionBoundaryPolicies: check.boundary ? [{ name: 'boundary', policy: check.boundary }] : undefined,
    request: {
      action: check.action,
      principal: check.principal,
      resource: { accountId: input.account, resource: check.resource },
      contextVariables: check.context,
    },
  }, {})
  if (response.resultType !== 'single') {
    results.push({ decision: 'Error', error: JSON.stringify(response.errors ?? response.resultType) })
    continue
  }
  results.push({ decision: response.overallResult })
}
process.stdout.write(JSON.stringify(results))
