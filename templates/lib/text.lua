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

-- FNV-1a over a string, as 8 hex digits (a short, deterministic digest for names).
local function fnv32(s)
  local h = 0x811c9dc5
  for i = 1, #s do h = ((h ~ s:byte(i)) * 0x01000193) & 0xffffffff end
  return string.format("%08x", h)
end

-- A readable kernel name for configuration c: prefix, then "_<key><value>" for every parameter
-- of `params` (a template's params list) whose value is not its default, in order
-- ("sp_gemm_bn256_stages4"). Past 120 characters the tail is replaced by a digest of the whole
-- configuration, so names stay unique and within NVRTC's limits.
function M.kernel_name(prefix, c, params)
  local parts, all = {prefix}, {}
  for _, p in ipairs(params) do
    local v = c[p.name]
    local default = p.default
    if default == nil then default = p.values[1] end
    -- a parameter added after kernels were recorded (p.added) leaves their names as they were at its default
    if not (p.added and v == default) then all[#all + 1] = p.name .. "=" .. tostring(v) end
    if v ~= default then
      if type(v) == "boolean" then v = v and 1 or 0 end
      parts[#parts + 1] = p.name .. tostring(v)
    end
  end
  local name = table.concat(parts, "_"):gsub("[^%w_]", "_")
  if #name > 120 then name = name:sub(1, 110) .. "_" .. fnv32(table.concat(all, ",")) end
  return name
end

return M
