-- Drives ctxproxy from headless Neovim (0.7+) with the built-in LSP client:
--   CTXPROXY_BIN=... CTXPROXY_STORE_PATH=... CTXPROXY_NVIM_OUT=out.json \
--     nvim --headless -u NONE -c "luafile tests/nvim/drive.lua"
-- Writes every request's result (and the ctx/event notifications) as JSON to
-- CTXPROXY_NVIM_OUT, then quits.
local bin = os.getenv("CTXPROXY_BIN")
local store = os.getenv("CTXPROXY_STORE_PATH")
local out = os.getenv("CTXPROXY_NVIM_OUT")

local results = { events = {}, steps = {}, nvim = tostring(vim.version().major) .. "." .. tostring(vim.version().minor) }
local initialized = false
local exited = false

local function write_results()
  local f = assert(io.open(out, "w"))
  f:write(vim.fn.json_encode(results))
  f:close()
end

local client_id = vim.lsp.start_client({
  name = "ctxproxy",
  cmd = { bin, "serve", "--store", store },
  root_dir = vim.fn.getcwd(),
  init_options = { budget = 8000, encoding = "o200k_base" },
  on_init = function(_, result)
    results.server_info = result.serverInfo
    initialized = true
  end,
  on_exit = function(code, signal)
    results.exit_code = code
    results.exit_signal = signal
    exited = true
  end,
  handlers = {
    ["ctx/event"] = function(_, params)
      table.insert(results.events, params)
    end,
  },
})

local function run()
  assert(client_id, "start_client failed")
  assert(vim.wait(10000, function() return initialized end, 10), "server did not initialize within 10s")
  local client = assert(vim.lsp.get_client_by_id(client_id))

  local function call(method, params)
    local reply, why = client.request_sync(method, params, 15000, 0)
    if not reply then
      error(method .. ": " .. tostring(why))
    end
    table.insert(results.steps, { method = method, err = reply.err, result = reply.result })
    if reply.err then
      error(method .. " failed: " .. vim.inspect(reply.err))
    end
    return reply.result
  end

  local open = call("ctx/openSession", { title = "from neovim", workspace = vim.fn.getcwd() })
  local sid = open.sessionId
  results.session = sid
  results.append = call("ctx/append", {
    sessionId = sid,
    messages = {
      { role = "user", content = "What is in src/a.rs?", kind = "query" },
      {
        role = "assistant",
        content = "Reading it.",
        toolCalls = { { id = "call_1", name = "read_file", arguments = { path = "src/a.rs" } } },
      },
      { role = "tool", toolCallId = "call_1", name = "read_file", content = "fn main() {\n    println!(\"nvim\");\n}\n" },
      { role = "assistant", content = "It prints nvim." },
    },
  })
  results.assemble = call("ctx/assemble", {
    sessionId = sid,
    system = "You are helpful.",
    input = { role = "user", content = "And what does it print?" },
    format = "openai",
  })
  local ids = { "x1", "x1.2", "x1.3" }
  for _, b in ipairs(results.append.blobs) do
    table.insert(ids, b.id)
  end
  results.retrieve = call("ctx/retrieve", { sessionId = sid, ids = ids })
  results.search = call("ctx/search", { sessionId = sid, query = "println" })
  results.stats = call("ctx/stats", {}) -- an empty Lua table: the server accepts [] as {}
  results.sessions = call("ctx/listSessions", {})
  vim.wait(200) -- let trailing ctx/event notifications arrive
  client.stop()
  vim.wait(3000, function() return exited end, 10)
end

local ok, err = pcall(run)
results.ok = ok
if not ok then
  results.error = tostring(err)
end
write_results()
vim.cmd("qa!")
