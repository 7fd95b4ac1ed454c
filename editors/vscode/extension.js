// The sdm debugger for VS Code: configurations of type "sdm" run
// `sdm dap`, the Debug Adapter Protocol server of sdm, which starts the
// MPI job (or attaches to one) and shows its ranks as threads.
const vscode = require('vscode');

function activate(context) {
  context.subscriptions.push(vscode.debug.registerDebugAdapterDescriptorFactory('sdm', {
    createDebugAdapterDescriptor() {
      const sdm = vscode.workspace.getConfiguration('sdm').get('path') || 'sdm';
      return new vscode.DebugAdapterExecutable(sdm, ['dap']);
    },
  }));
}

function deactivate() {}

module.exports = { activate, deactivate };
