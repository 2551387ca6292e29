-- Text helpers for emitters: ${name} substitution that refuses unknown names, so a typo in a
-- template is an error at render time instead of broken CUDA C.
local M = {}

function M.fill(tpl, vars)
  return (tpl:gsub("%${([%w_]+)}", function(k)
    local v = vars[k]
    if v == nil then error("fill: no value for ${" .. k .. "}", 3) end
    return tostring(v)
  end))
end

-- Joins a list of strings with newlines (nil entries skipped).
function M.lines(list)
  local out = {}
  for i = 1, #list do
    if list[i] then out[#out + 1] = list[i] end
  end
  return table.concat(out, "\n")
end

-- "a" .. "1_2" style identifiers from a configuration, in the order of `keys`; values_only
-- leaves the keys out (shorter, still unique for a fixed key list).
function M.ident(prefix, c, keys, values_only)
  local parts = {prefix}
  for _, k in ipairs(keys) do
    local v = c[k]
    if type(v) == "boolean" then v = v and 1 or 0 end
    parts[#parts + 1] = (values_only and "" or k) .. tostring(v)
  end
  return (table.concat(parts, "_"):gsub("[^%w_]", "_"))
end

return M
