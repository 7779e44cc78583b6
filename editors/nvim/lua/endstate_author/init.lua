-- endstate-author language server for Neovim (0.7 and later).
--
-- Put the folder that holds this lua/ folder on the runtimepath (`endstate-author editor path
-- nvim` prints it), then:
--
--   require("endstate_author").setup({
--     cmd = { "endstate-author", "lsp" },          -- how to start the server
--     settings = { trusted = false, proveOnSave = true, debounceMs = 150, sandbox = "auto" },
--   })
--
-- Starts (or reuses) one client per suite root for every buffer named task.json. Uses
-- nvim-lspconfig when it is installed and `use_lspconfig = true`; otherwise the core API
-- (vim.lsp.start on 0.8+, vim.lsp.start_client + buf_attach_client on 0.7).
local M = {}

local defaults = {
  cmd = { "endstate-author", "lsp" },
  settings = { trusted = false, proveOnSave = true, debounceMs = 150, sandbox = "auto" },
  use_lspconfig = false,
}

local clients = {} -- root_dir -> client id (0.7 path)

local function root_of(fname)
  local dir = vim.fn.fnamemodify(fname, ":p:h")
  local found = vim.fn.finddir(".git", dir .. ";")
  if found ~= "" then
    return vim.fn.fnamemodify(found, ":p:h:h")
  end
  local py = vim.fn.findfile("pyproject.toml", dir .. ";")
  if py ~= "" then
    return vim.fn.fnamemodify(py, ":p:h")
  end
  return vim.fn.fnamemodify(dir, ":h")
end

local function client_config(opts, root)
  return {
    name = "endstate-author",
    cmd = opts.cmd,
    root_dir = root,
    init_options = opts.settings,
    settings = { ["endstate-author"] = opts.settings },
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
  }
end

local function attach(opts, bufnr)
  local fname = vim.api.nvim_buf_get_name(bufnr)
  if vim.fn.fnamemodify(fname, ":t") ~= "task.json" then
    return
  end
  local root = root_of(fname)
  if vim.lsp.start then
    vim.lsp.start(client_config(opts, root), { bufnr = bufnr })
    return
  end
  local id = clients[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(client_config(opts, root))
    clients[root] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
end

function M.setup(user)
  local opts = vim.tbl_deep_extend("force", defaults, user or {})
  if opts.use_lspconfig then
    local ok, configs = pcall(require, "lspconfig.configs")
    if ok then
      if not configs.endstate_author then
        configs.endstate_author = {
          default_config = {
            cmd = opts.cmd,
            filetypes = { "json" },
            root_dir = function(fname)
              if vim.fn.fnamemodify(fname, ":t") == "task.json" then
                return root_of(fname)
              end
            end,
            init_options = opts.settings,
            settings = { ["endstate-author"] = opts.settings },
          },
        }
      end
      require("lspconfig").endstate_author.setup({})
      return
    end
  end
  local group = vim.api.nvim_create_augroup("endstate_author", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "task.json",
    callback = function(args)
      attach(opts, args.buf)
    end,
  })
  -- buffers already open when setup() runs
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      attach(opts, bufnr)
    end
  end
end

return M
