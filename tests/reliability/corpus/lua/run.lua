-- The corpus's Lua workload (tests/reliability/corpus.py): run.lua SCALE
-- SCRIPT... runs each script with the global N (its size) and prints what
-- it prints. Every script's output depends only on N: no addresses, no
-- clock, no iteration order of hashed keys.
local scale = tonumber(arg[1]) or 1
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
for i = 2, #arg do
  N = math.max(1, math.floor(100 * scale))
  io.write("== ", arg[i], " N=", N, "\n")
  dofile(dir .. "/" .. arg[i] .. ".lua")
end
