-- tinycode as an ACP adapter for CodeCompanion.nvim (https://github.com/olimorris/codecompanion.nvim).
-- It extends the preset "goose" adapter, which has no auth method: tinycode advertises none either.
require("codecompanion").setup({
  adapters = {
    acp = {
      tinycode = function()
        return require("codecompanion.adapters").extend("goose", {
          name = "tinycode",
          formatted_name = "tinycode",
          commands = {
            default = { "tinycode", "acp" },
          },
          env = {
            TINYCODE_BASE_URL = "http://127.0.0.1:11434/v1",
            TINYCODE_MODEL = "qwen3-coder:30b",
          },
        })
      end,
    },
  },
  interactions = {
    chat = {
      adapter = "tinycode",
    },
  },
})
