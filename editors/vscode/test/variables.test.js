// Variables as an editor shows them, through Microsoft's own DAP test
// client: C++ objects (examples/domain: vectors, a map, a string, nested
// structs, a base class, an owned pointer) and Fortran's (examples/shapes:
// a derived type, an array) open into their members as gdb's
// pretty-printers give them, with nothing made up. Run as sdm.test.js.
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const sdm = process.env.SDM_BIN;
const examples = process.env.SDM_EXAMPLES;
const root = process.env.SDM_ROOT;

// lineOf is the line of file that holds mark.
function lineOf(file, mark) {
  return fs.readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(mark)) + 1;
}

describe('variables under the VS Code test client', function () {
  let dc;

  beforeEach(function () {
    assert.ok(sdm && examples && root, 'SDM_BIN, SDM_EXAMPLES and SDM_ROOT must be set');
    dc = new DebugClient(sdm, 'dap', 'sdm');
    dc.defaultTimeout = 60000;
    return dc.start();
  });

  afterEach(function () {
    return dc.stop();
  });

  // members lists what the variable named name among vars opens into.
  async function members(vars, name) {
    const v = vars.find((x) => x.name === name);
    assert.ok(v && v.variablesReference > 0, `${name} cannot be opened: ${JSON.stringify(vars)}`);
    return (await dc.variablesRequest({ variablesReference: v.variablesReference })).body.variables;
  }

  // stoppedAt launches program's ranks, stops them at line of source and
  // returns rank 0's frames there.
  async function stoppedAt(program, source, line) {
    const launch = { program: path.join(examples, program), ranks: 2, rm: 'local', cwd: root };
    // The ranks stop in their own time: rank 0 may come after rank 1.
    const everyRankStopped = new Promise((resolve) => {
      dc.on('stopped', (e) => { if (e.body.allThreadsStopped) resolve(); });
    });
    await dc.hitBreakpoint(launch, { path: source, line });
    await everyRankStopped;
    const threads = (await dc.threadsRequest()).body.threads;
    return (await dc.stackTraceRequest({ threadId: threads[0].id })).body.stackFrames;
  }

  it('opens C++ objects into their members, as gdb pretty-prints them', async function () {
    const source = path.join(root, 'examples', 'domain', 'domain.cpp');
    const frames = await stoppedAt('domain', source, lineOf(source, 'the domain is filled here'));
    const scopes = (await dc.scopesRequest({ frameId: frames[1].id })).body.scopes;
    const locals = (await dc.variablesRequest({ variablesReference: scopes[0].variablesReference })).body.variables;
    const domain = await members(locals, 'domain');
    const names = domain.map((v) => v.name);
    for (const want of ['Mesh', 'm_x', 'm_empty', 'names', 'title', 'corner', 'corners', 'owned']) {
      assert.ok(names.includes(want), `no member ${want} in ${JSON.stringify(names)}`);
    }
    assert.ok(!names.includes('public'), `an access group shown as a member: ${JSON.stringify(names)}`);
    assert.deepStrictEqual((await members(domain, 'm_x')).map((v) => [v.name, v.value]), [['[0]', '1.5'], ['[1]', '2.5'], ['[2]', '3.5']]);
    const empty = domain.find((v) => v.name === 'm_empty');
    if (empty.variablesReference > 0) {
      assert.deepStrictEqual(await members(domain, 'm_empty'), []);
    }
    assert.deepStrictEqual((await members(domain, 'names')).map((v) => v.value), ['"x"', '1', '"yy"', '2']);
    assert.strictEqual(domain.find((v) => v.name === 'title').value, '"lulesh"');
    const corners = await members(domain, 'corners');
    assert.deepStrictEqual(corners.map((v) => v.name), ['[0]', '[1]', '[2]']);
    assert.deepStrictEqual((await members(corners, '[2]')).map((v) => [v.name, v.value]), [['x', '5'], ['y', '6']]);
    assert.strictEqual((await members(domain, 'Mesh')).find((v) => v.name === 'cells').value, '216');
    const owned = await members(domain, 'owned');
    assert.ok(owned.length > 0, 'an owned pointer opens');
  });

  it('opens Fortran derived types and arrays into their members', async function () {
    const source = path.join(root, 'examples', 'shapes', 'shapes.f90');
    const frames = await stoppedAt('shapes', source, lineOf(source, 'print *, p%x'));
    const scopes = (await dc.scopesRequest({ frameId: frames[0].id })).body.scopes;
    const args = (await dc.variablesRequest({ variablesReference: scopes[1].variablesReference })).body.variables;
    assert.deepStrictEqual((await members(args, 'p')).map((v) => [v.name, v.value]), [['x', '1.5'], ['y', '2.5']]);
    assert.deepStrictEqual((await members(args, 'g')).map((v) => v.value), ['0.5', '1', '1.5', '2']);
  });
});
