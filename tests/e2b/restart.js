// Phase "make": sandboxes made and used, their ids and tokens written to
// E2B_STATE; the bats file then SIGKILLs and restarts the daemon.  Phase
// "use": the SDK, holding what it had, keeps using them.
'use strict';
const fs = require('fs');
const { e2b, template, check, main } = require('./common.js');
const { Sandbox } = e2b;

main(async () => {
  const file = process.env.E2B_STATE;
  if (process.argv[2] === 'make') {
    const s = [];
    for (let i = 0; i < 2; i++) {
      const sbx = await Sandbox.create(template);
      await sbx.files.write('kept.txt', 'kept ' + i);
      s.push({ id: sbx.sandboxId });
    }
    fs.writeFileSync(file, JSON.stringify(s));
    console.log('ok made 2');
    return;
  }
  const s = JSON.parse(fs.readFileSync(file));
  for (let i = 0; i < s.length; i++) {
    const sbx = await Sandbox.connect(s[i].id);
    check(await sbx.isRunning(), 'still running after the restart');
    check(await sbx.files.read('kept.txt') === 'kept ' + i, 'files kept');
    check((await sbx.commands.run('echo alive')).stdout === 'alive\n', 'commands run');
    await sbx.kill();
  }
});
