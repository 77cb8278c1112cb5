;;; tinycode for agent-shell (https://github.com/xenodium/agent-shell) -*- lexical-binding: t; -*-
(require 'acp)
(require 'agent-shell)

(defun tinycode-agent-shell-config ()
  "An agent-shell configuration that starts `tinycode acp'."
  (agent-shell-make-agent-config
   :identifier 'tinycode
   :mode-line-name "tinycode"
   :buffer-name "tinycode"
   :shell-prompt "tinycode> "
   :shell-prompt-regexp "tinycode> "
   :client-maker (lambda (buffer)
                   (acp-make-client
                    :command "tinycode"
                    :command-params '("acp")
                    :context-buffer buffer
                    :environment-variables
                    (list "TINYCODE_BASE_URL=http://127.0.0.1:11434/v1"
                          "TINYCODE_MODEL=qwen3-coder:30b")))))

(add-to-list 'agent-shell-agent-configs (tinycode-agent-shell-config))

(defun tinycode-agent-shell ()
  "Start a tinycode shell for the current project."
  (interactive)
  (agent-shell-start :config (tinycode-agent-shell-config)))
