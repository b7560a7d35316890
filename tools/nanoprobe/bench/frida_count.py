# SPDX-License-Identifier: MIT
"""Count hits with Frida, as `nanoprobe bench` compares it (bench_tools.c).

    frida_count.py SPEC OUT [NAME=VALUE...] -- PROGRAM ARGS...

SPEC: the probed file's path on the first line, then one probe a line:
"ADDRESS [return]", ADDRESS the hex distance from the file's lowest
loaded address. The program is spawned suspended, an Interceptor listener
goes on every function (one per function: entry and return share it), the
program is resumed with our input and output; NAME=VALUE pairs are its
whole environment. When the program calls _exit(), the counts are
written to OUT, one line per probe of SPEC, in order: "COUNT placed",
"COUNT redirected" (the function starts with a jump, which Frida follows
and hooks the target of: the count is the target's) or "0 refused REASON".

The listener is native: a CModule whose callbacks add 1 to the probe's
counter (a locked add, as the kernel's BPF counter does), so no JavaScript
runs per hit, the fairest Frida there is. Frida 17 (pip install frida).
"""
import sys
import threading

import frida

AGENT = r"""
const counter = new CModule(`
#include <gum/guminterceptor.h>

void on_enter (GumInvocationContext * ic)
{
  guint64 * c = GUM_IC_GET_FUNC_DATA (ic, guint64 *);
  asm volatile ("lock incq %0" : "+m" (c[0]));
}

void on_leave (GumInvocationContext * ic)
{
  guint64 * c = GUM_IC_GET_FUNC_DATA (ic, guint64 *);
  asm volatile ("lock incq %0" : "+m" (c[1]));
}
`);

let slots = null; /* two counters per function: entry, return */
let nslots = 0;

rpc.exports.place = function (path, addrs) {
  const m = Process.enumerateModules().find(m => m.path === path);
  if (m === undefined)
    return {error: path + ' is not loaded'};
  nslots = 2 * addrs.length;
  slots = Memory.alloc(8 * nslots);
  const state = addrs.map(([addr, ret], i) => {
    const at = m.base.add(addr);
    const insn = Instruction.parse(at);
    try {
      Interceptor.attach(at, ret ? {onEnter: counter.on_enter, onLeave: counter.on_leave}
                                 : {onEnter: counter.on_enter}, slots.add(16 * i));
    } catch (e) {
      return 'refused ' + e.message;
    }
    /* Interceptor follows a leading jump and hooks where it goes */
    return insn.mnemonic === 'jmp' ? 'redirected' : 'placed';
  });
  Interceptor.flush();
  /* the last call a process makes: after atexit handlers and stdio, whose
   * hits the other tools count too */
  Interceptor.attach(Process.getModuleByName('libc.so.6').getExportByName('_exit'), {
    onEnter() {
      const counts = addrs.map((_, i) => [slots.add(16 * i).readU64().toString(),
                                          slots.add(16 * i + 8).readU64().toString()]);
      send({counts: counts, state: state});
      recv('ack', () => {}).wait();
    }
  });
  return {};
};

/* Before the program runs: what the agent's own threads did while the
 * listeners went on is not the program's. */
rpc.exports.reset = function () {
  for (let i = 0; i < nslots; i++)
    slots.add(8 * i).writeU64(0);
};
"""


def read_spec(path):
    with open(path) as f:
        lines = f.read().split("\n")
    probes = [line.split() for line in lines[1:] if line.strip()]
    return lines[0], [(p[0], len(p) > 1 and p[1] == "return") for p in probes]


def main():
    if "--" not in sys.argv or sys.argv.index("--") < 3:
        sys.exit(__doc__)
    dash = sys.argv.index("--")
    spec, out = sys.argv[1], sys.argv[2]
    env = dict(kv.split("=", 1) for kv in sys.argv[3:dash])
    argv = sys.argv[dash + 1:]
    path, probes = read_spec(spec)
    # One listener per function: its entry and return probes are one attach.
    funcs = {}
    for addr, ret in probes:
        funcs[addr] = funcs.get(addr, False) or ret
    addrs = list(funcs)

    device = frida.get_local_device()
    # its input and output are ours, as under the other tools
    pid = device.spawn(argv, envp=env, stdio="inherit")
    session = device.attach(pid)
    script = session.create_script(AGENT)
    result = {}
    gone = threading.Event()

    def on_message(msg, _data):
        if msg["type"] == "send":
            result.update(msg["payload"])
            script.post({"type": "ack"})
        else:
            print(msg.get("description", msg), file=sys.stderr)

    script.on("message", on_message)
    session.on("detached", lambda *_: gone.set())
    script.load()
    placed = script.exports_sync.place(path, [[a, funcs[a]] for a in addrs])
    if "error" in placed:
        device.kill(pid)
        sys.exit("frida_count: " + placed["error"])
    script.exports_sync.reset()
    device.resume(pid)
    gone.wait()
    if "counts" not in result:
        sys.exit("frida_count: the program ended without calling _exit()")
    index = {a: i for i, a in enumerate(addrs)}
    with open(out, "w") as f:
        for addr, ret in probes:
            i = index[addr]
            state = result["state"][i]
            count = "0" if state.startswith("refused") else result["counts"][i][1 if ret else 0]
            f.write(f"{count} {state}\n")


if __name__ == "__main__":
    main()
