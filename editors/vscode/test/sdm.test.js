// sdm dap driven by Microsoft's own DAP test client, as VS Code drives
// it: 4 Open MPI ranks of examples/ring stop at a breakpoint, show as 4
// threads, step, run to their end. The Go tests (integration/dap_test.go)
// run this with SDM_BIN (the sdm binary), SDM_EXAMPLES (where the
// examples were built) and SDM_ROOT (the project's root).
const assert = require('assert');
const path = require('path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const sdm = process.env.SDM_BIN;
const examples = process.env.SDM_EXAMPLES;
const root = process.env.SDM_ROOT;

describe('sdm dap under the VS Code test client', function () {
  let dc;
  const source = path.join(root, 'examples', 'ring', 'ring.c');
  const launch = {
    program: path.join(examples, 'ring'), args: ['2'], ranks: 4, rm: 'openmpi', cwd: root,
    launcherArgs: ['--allow-run-as-root', '--oversubscribe'],
  };

  beforeEach(function () {
    assert.ok(sdm && examples && root, 'SDM_BIN, SDM_EXAMPLES and SDM_ROOT must be set');
    dc = new DebugClient(sdm, 'dap', 'sdm');
    dc.defaultTimeout = 60000;
    return dc.start();
  });

  afterEach(function () {
    return dc.stop();
  });

  it('answers initialize with its capabilities', async function () {
    const r = await dc.initializeRequest();
    assert.ok(r.body.supportsConfigurationDoneRequest);
    assert.ok(r.body.supportsConditionalBreakpoints);
    assert.ok(r.body.supportsLogPoints);
  });

  it('refuses a launch without a program, saying why', async function () {
    await dc.initializeRequest();
    await assert.rejects(dc.launchRequest({ ranks: 2 }), /no program given/);
  });

  it('stops every rank at a breakpoint, steps, and runs them to the end', async function () {
    // The ranks reach the breakpoint in their own time: a rank that stops
    // after the others is told in a stopped event of its own.
    const everyRankStopped = new Promise((resolve) => {
      dc.on('stopped', (e) => { if (e.body.allThreadsStopped) resolve(); });
    });
    await dc.hitBreakpoint(launch, { path: source, line: 8 });
    await everyRankStopped;
    const threads = (await dc.threadsRequest()).body.threads;
    assert.deepStrictEqual(threads.map((t) => t.name), ['rank 0', 'rank 1', 'rank 2', 'rank 3']);
    const frames = (await dc.stackTraceRequest({ threadId: threads[2].id })).body.stackFrames;
    assert.strictEqual(frames[0].name, 'pass');
    assert.strictEqual(frames[1].name, 'main');
    const scopes = (await dc.scopesRequest({ frameId: frames[0].id })).body.scopes;
    const args = (await dc.variablesRequest({ variablesReference: scopes[1].variablesReference })).body.variables;
    assert.ok(args.some((v) => v.name === 'rank' && v.value === '2'), JSON.stringify(args));
    const repl = await dc.evaluateRequest({ expression: 'stacks', context: 'repl' });
    assert.match(repl.body.result, /\[0-3\]/);
    // As at the breakpoint, the ranks end their step in their own time:
    // continue waits until every one has, or a straggler would stay behind.
    const everyRankStepped = new Promise((resolve) => {
      dc.on('stopped', (e) => { if (e.body.reason === 'step' && e.body.allThreadsStopped) resolve(); });
    });
    await Promise.all([dc.nextRequest({ threadId: threads[0].id }), dc.assertStoppedLocation('step', { path: source, line: 9 })]);
    await everyRankStepped;
    await dc.setBreakpointsRequest({ source: { path: source }, breakpoints: [] });
    let stdout = '';
    dc.on('output', (e) => { if (e.body.category === 'stdout') stdout += e.body.output; });
    await Promise.all([dc.continueRequest({ threadId: threads[0].id }), dc.waitForEvent('terminated')]);
    assert.match(stdout, /^\[0\] token after 2 rounds: 12$/m);
    assert.match(stdout, /^\[[0-3,-]+\] ring of 4 ranks done$/m);
  });
});
