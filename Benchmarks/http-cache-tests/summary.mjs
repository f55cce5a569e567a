// Our results beside the published ones in the suite's results/ folder, each test classified
// by the suite's own determineTestResult (dependencies honoured, as cache-tests.fyi shows them).
//   node summary.mjs SUITE_DIR OUR_RESULTS.json
import fs from 'fs'
import path from 'path'

const [suite, ours] = process.argv.slice(2)
const { determineTestResult, resultTypes } = await import(path.resolve(suite, 'test-engine/lib/results.mjs'))
const tests = (await import(path.resolve(suite, 'tests/index.mjs'))).default
const published = (await import(path.resolve(suite, 'results/index.mjs'))).default
  .filter(r => r.type !== 'browser')

const ids = tests.flatMap(s => s.tests.map(t => t.id))
const kinds = ['pass', 'fail', 'optional_fail', 'yes', 'no', 'setup_fail', 'harness_fail', 'dependency_fail', 'untested', 'retry']
function classify (results) {
  const counts = Object.fromEntries(kinds.map(k => [k, 0]))
  const notPassed = []
  for (const id of ids) {
    const r = determineTestResult(tests, id, results)
    const kind = Object.keys(resultTypes).find(k => resultTypes[k] === r)
    counts[kind]++
    if (['fail', 'optional_fail', 'setup_fail', 'harness_fail', 'retry'].includes(kind)) notPassed.push([kind, id, results[id]])
  }
  return { counts, notPassed }
}

const rows = [['urlcache proxy', classify(JSON.parse(fs.readFileSync(ours)))]]
for (const r of published) {
  rows.push([`${r.name} ${r.version || ''}`.trim(), classify(JSON.parse(fs.readFileSync(path.join(suite, 'results', r.file))))])
}
console.log(`${ids.length} tests. pass: required or optimal behaviour shown; fail: a required one missing; optional_fail: an`)
console.log('optimal one missing; yes/no: informational checks; setup_fail: the test could not get to its assertion')
console.log('(often a response the cache chose not to store); dependency_fail: a test it depends on did not pass.\n')
console.log(['cache'.padEnd(34), ...kinds.map(k => k.padStart(k.length))].join(' '))
for (const [name, { counts }] of rows) console.log([name.padEnd(34), ...kinds.map(k => String(counts[k]).padStart(k.length))].join(' '))
console.log('\nurlcache proxy, tests not passed:')
for (const [kind, id, result] of rows[0][1].notPassed) console.log(`  ${kind.padEnd(14)} ${id}: ${JSON.stringify(result)}`)
