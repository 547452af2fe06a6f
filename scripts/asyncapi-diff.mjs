// The AsyncAPI side of the release gate (tools/gates/src/gates/contract_gate.py): for each
// pair of documents on stdin ({pairs: [[base, revision], ...]}, file paths),
// parses both with @asyncapi/parser (references resolved, as `asyncapi diff`
// does) and writes @asyncapi/diff's changes ({changes: [{action, path,
// before, after, type}]}) in order, as a JSON list. What `asyncapi diff -f json`
// computes, in one process for many pairs: the CLI would spend its start-up
// (its linter's rules) again on each.

import { Parser, fromFile } from '@asyncapi/parser'
import { diff } from '@asyncapi/diff'

const input = JSON.parse(await new Promise((resolve) => {
  let text = ''
  process.stdin.on('data', (chunk) => { text += chunk })
  process.stdin.on('end', () => resolve(text))
}))

const parser = new Parser()
// The fixtures share one base: each distinct file is parsed once.
const parsed = new Map()

async function parse(path) {
  if (!parsed.has(path)) parsed.set(path, parseFile(path))
  return parsed.get(path)
}

async function parseFile(path) {
  const { document, diagnostics } = await fromFile(parser, path).parse()
  if (!document) {
    const errors = diagnostics.filter((d) => d.severity === 0).map((d) => `${d.path.join('/')}: ${d.message}`)
    throw new Error(`${path} does not parse: ${errors.join('; ')}`)
  }
  return document.json()
}

const results = []
for (const [base, revision] of input.pairs) {
  // @asyncapi/diff may annotate what it is given: each diff gets copies.
  const output = diff(structuredClone(await parse(base)), structuredClone(await parse(revision)), { outputType: 'json' })
  results.push(output.getOutput())
}
process.stdout.write(JSON.stringify(results))
