-- The activation distribution every TwELL op's data is drawn from (tuner/sp_twell_dist.h): problem
-- dimensions with defaults, so that "M=16384,D=2048,F=5632,nnz=40" means realistic activations
-- (heavy-tailed neurons, 30 % dead, 0.5 % dense tokens of ~2000 nonzeros) and dense=0,tail=0 the
-- uniform ones. nnz is the mean over the whole batch, dense tokens included: optional (an engine does
-- not know it ahead), 40 when left out, what the shipped results were mostly measured at.
local M = {}

M.dims = {{"nnz", 40}, {"dead", 30}, {"tail", 0.7}, {"dense", 0.5}, {"dense_nnz", 2000}, {"at", 2}}

-- What they may be (a problem outside is refused when it is parsed): nonzeros per token and per dense
-- token, percentages of neurons and of tokens, the tail exponent, where dense tokens sit (0 first tokens,
-- 1 scattered, 2 both); `extra` adds an op's own.
function M.ranges(extra)
  local r = {nnz = {0, 1e9}, dead = {0, 100}, tail = {0, 16}, dense = {0, 100}, dense_nnz = {0, 1e9},
             at = {0, 2, int = true, category = true}}
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

-- How the data of the ops that take X and Wg (twell-d2t, twell-ffn) is made: gen 0 draws each neuron's firing
-- per token at its rate (the first generator), gen 1 makes the activations by the layer itself: Gaussian tokens
-- with a per-token gain (log-normal, sigma `spread`: some tokens fire far more neurons than others; dense tokens
-- are those of a large gain) through gate weights whose per-neuron biases set the heavy-tailed rates. Added after
-- results were recorded, with defaults that are the data those were measured on (as_before: a key without them is
-- the same problem). Neither is a user's: a model's activations come from neither generator, so a configuration is
-- served for the best worst case over the data it was measured on (across). gen 2 (own) is no generator: it marks
-- results timed on an application's own tensors (sptune_kernel_autotune, `sptune tune --data`), which the lookup
-- serves where a problem has them.
M.made = {{"gen", 0}, {"spread", 0.5}}
M.made_ranges = {gen = {0, 2, int = true, category = true, as_before = true, across = true, own = 2},
                 spread = {0, 3, as_before = true, across = true}}

-- The op's own dimensions followed by the distribution's, then `after` (optional: {name, default} pairs).
function M.with(own, after)
  local out = {}
  for _, d in ipairs(own) do out[#out + 1] = d end
  for _, d in ipairs(M.dims) do out[#out + 1] = d end
  for _, d in ipairs(after or {}) do out[#out + 1] = d end
  return out
end

return M
