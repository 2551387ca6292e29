-- The C side of a template's argument declaration (its `args` table; templates/README.md,
-- "Arguments"): the kernel's parameter list is generated from the same table the tool, the harness
-- and the public API read, so the four can never disagree.
local M = {}

local ctype = {bf16 = "sp_bf16", f16 = "sp_bf16", x16 = "sp_bf16", u8 = "unsigned char", u32 = "sp_u32",
               u64 = "unsigned long long", i32 = "int", f32 = "float"}
local pointer = {input = true, output = true, workspace = true}

-- "const sp_bf16 *__restrict__ X" for one declaration (const: inputs, and the names in readonly).
local function param(a, readonly)
  local t = ctype[a.type] or error("args: " .. tostring(a.name) .. " has unknown type " .. tostring(a.type), 3)
  if pointer[a.role] then
    local const = a.role == "input" or (readonly and readonly[a.name])
    return (const and "const " or "") .. t .. " *__restrict__ " .. a.name
  end
  return t .. " " .. a.name
end

-- The parameter list, wrapped under 110 columns with continuation lines indented by 8 spaces;
-- `extra` (optional) is appended as is (the tensor maps' parameters); `readonly` (optional, a set
-- of names) makes those pointers const in this kernel (a workspace that a pipeline's later kernel
-- only reads).
function M.params(args, extra, readonly)
  local indent = "        "
  local lines, line = {}, ""
  for i, a in ipairs(args) do
    local p = param(a, readonly) .. (i < #args and "," or "")
    if #line > 0 and #line + 1 + #p > 100 then
      lines[#lines + 1] = line
      line = indent .. p
    else
      line = (#line > 0 and line .. " " or line) .. p
    end
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n") .. (extra or "")
end

-- The position (from 0) of the argument called `name`, for messages and checks.
function M.index(args, name)
  for i, a in ipairs(args) do
    if a.name == name then return i - 1 end
  end
  error("args: no argument called " .. tostring(name), 2)
end

return M
