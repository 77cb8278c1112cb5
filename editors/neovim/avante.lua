-- tinycode as an ACP provider for avante.nvim (https://github.com/yetone/avante.nvim)
require("avante").setup({
  provider = "tinycode",
  acp_providers = {
    ["tinycode"] = {
      command = "tinycode",
      args = { "acp" },
      env = {
        TINYCODE_BASE_URL = "http://127.0.0.1:11434/v1",
        TINYCODE_MODEL = "qwen3-coder:30b",
        -- A hosted provider's key, read from your shell (or put api_key in ~/.config/tinycode/config.toml):
        TINYCODE_API_KEY = os.getenv("TINYCODE_API_KEY"),
      },
    },
  },
})
