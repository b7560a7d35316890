-- string library: formats, patterns, packing, utf8
local words = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"}
local parts = {}
for i = 1, N * 10 do
  local w = words[i % #words + 1]
  parts[#parts + 1] = string.format("%-8s|%5d|%08.3f|%x|%q", w, i * 37 % 1000, i / 7, i * 97, w:upper())
end
local text = table.concat(parts, "\n")
print(#text, text:sub(1, 60))
local n = 0
for a, b in text:gmatch("(%a+)%s*|%s*(%d+)") do n = n + #a + tonumber(b) end
print("gmatch", n)
local r, k = text:gsub("(%d)(%d)", "%2%1")
print("gsub", k, #r, r:sub(100, 140))
print("gsub fn", (text:gsub("%u+", function(s) return s:lower() end)):sub(1, 50))
print("find", text:find("golf", 1, true), text:find("%d%d%d%.%d+"), text:match("|(%x+)|", 200))
local acc = 0
for i = 1, N * 20 do
  local s = string.rep("ab", i % 17) .. tostring(i) .. string.char(65 + i % 26)
  acc = acc + #s + s:byte(-1) + select("#", s:byte(1, -1))
  acc = acc + #(s:reverse()) + (s:find("b" .. (i % 10)) or 0)
end
print("bytes", acc)
local packed = {}
for i = 1, N * 5 do
  packed[#packed + 1] = string.pack("<i4 d s2 z", i, i * 0.25, "p" .. i, "z" .. i)
end
local sum = 0
for _, p in ipairs(packed) do
  local a, b, c, d = string.unpack("<i4 d s2 z", p)
  sum = sum + a + b + #c + #d
end
print("pack", sum, string.packsize("<i4 d"))
local u = {}
for i = 1, N * 3 do u[#u + 1] = utf8.char(0x41 + i % 50, 0x3b1 + i % 20, 0x4e00 + i) end
local us = table.concat(u)
local cps = 0
for _, c in utf8.codes(us) do cps = cps + c end
print("utf8", utf8.len(us), cps, utf8.offset(us, 10))
print(string.format("%5.2f %g %e %a %i %c%c", math.pi, 1e300 * 10, 12345.678, 1.0, -42, 76, 117))
print(("%s=%s"):rep(3, ","):format(1, 2, 3, 4, 5, 6))
