// rfa chat RUN [--system TEXT] [-n N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--state-dir DIR]
// An interactive chat over the serving engine, in this process (docs/serving.md, "rfa chat"):
// each turn appends only its own tokens to the live state; the reply streams; /reset,
// /save NAME, /load NAME, /help; Ctrl-C stops the reply, Ctrl-D exits.
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "cli/serve_options.h"
#include "config/config_enums.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "serve/http_server.h"
#include "serve/serve_setup.h"

namespace rfa {
namespace {

struct ChatArgs {
  ServeSetupOptions setup;
  GenerationParams params;
  std::string system;
};

std::atomic<bool> g_quit{false};
std::mutex g_current_mutex;
std::shared_ptr<RequestHandle> g_current;  // the reply streaming now, if any

void say(const std::string& s) {
  std::fputs(s.c_str(), stdout);
  std::fflush(stdout);
}

// SIGINT (Ctrl-C) stops the current reply; SIGTERM and SIGHUP end the chat. They are
// taken by sigwait on one thread, blocked everywhere else (the OpenMP workers too, as in
// core/stop_signals.h); a signal inherited as ignored stays ignored.
class ChatSignals {
 public:
  ChatSignals() {
    sigemptyset(&set_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      sigaction(sig, nullptr, &old);
      if (old.sa_handler != SIG_IGN) sigaddset(&set_, sig);
    }
    pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
    const sigset_t set = set_;
    parallel_region([&](int, int) { pthread_sigmask(SIG_BLOCK, &set, nullptr); });
    if (sigismember(&set_, SIGINT) || sigismember(&set_, SIGTERM) || sigismember(&set_, SIGHUP))
      watcher_ = std::thread([this] { watch(); });
  }
  ~ChatSignals() {
    done_ = true;
    if (watcher_.joinable()) {
      for (int sig : {SIGINT, SIGTERM, SIGHUP})
        if (sigismember(&set_, sig)) {
          pthread_kill(watcher_.native_handle(), sig);
          break;
        }
      watcher_.join();
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  void watch() {
    for (;;) {
      int sig = 0;
      if (sigwait(&set_, &sig) != 0 || done_) return;
      std::lock_guard<std::mutex> lock(g_current_mutex);
      if (sig != SIGINT) g_quit = true;
      if (g_current)
        g_current->stop();
      else if (sig == SIGINT)
        say("\n(Ctrl-C stops a reply; Ctrl-D or /quit exits)\n> ");
    }
  }

  sigset_t set_{}, old_mask_{};
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

// A line from stdin without its newline; nullopt at end of input (Ctrl-D) or on SIGTERM.
std::optional<std::string> line_read() {
  std::string line;
  for (;;) {
    if (g_quit) return std::nullopt;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char c;
    const ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n <= 0) {
      if (!line.empty()) return line;  // the last line of a file without its newline
      return std::nullopt;
    }
    if (c == '\n') return line;
    line.push_back(c);
  }
}

const char* const kHelp =
    "  /reset       forget the conversation (start a new one)\n"
    "  /save NAME   save the conversation's state to NAME.state in the state directory\n"
    "  /load NAME   continue the conversation saved as NAME\n"
    "  /help        this list;  /quit or Ctrl-D exits;  Ctrl-C stops a reply\n";

class Chat {
 public:
  Chat(ServeSetup& s, const ChatArgs& a) : s_(s), a_(a), tok_(*s.loaded.tokenizer) { reset(); }

  void reset() {
    messages_.clear();
    if (!a_.system.empty()) messages_.push_back({"system", a_.system});
    consumed_.clear();
  }

  // The tokens of the next request: the live state's tokens and the new turn's, when the
  // rendered conversation continues the state's text (it does after a reply that ended at a
  // stop string, EOS or its length); otherwise the conversation tokenized anew.
  std::vector<int32_t> next_prompt() const {
    std::string full;
    for (const std::string& piece : s_.chat_template->render(messages_)) full += piece;
    if (!consumed_.empty()) {
      const std::string state_text = tok_.decode(consumed_);
      if (full.compare(0, state_text.size(), state_text) == 0) {
        std::vector<int32_t> tokens = consumed_;
        tok_.encode_append(std::string_view(full).substr(state_text.size()), tokens);
        return tokens;
      }
    }
    return chat_tokens(tok_, *s_.chat_template, messages_);
  }

  void turn(const std::string& text) {
    messages_.push_back({"user", text});
    GenerationRequest g;
    g.prompt = next_prompt();
    g.params = a_.params;
    for (const std::string& stop : s_.chat_template->stops) g.params.stop.push_back(stop);
    std::shared_ptr<RequestHandle> handle;
    try {
      handle = s_.engine->submit(std::move(g));
    } catch (const std::exception& e) {
      messages_.pop_back();
      say(fmt::format("(error: {})\n", e.what()));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(g_current_mutex);
      g_current = handle;
    }
    Timer timer;
    std::string reply;
    FinishReason reason = FinishReason::stop;
    std::string error;
    std::vector<ReplyEvent> events;
    for (bool finished = false; !finished;) {
      events.clear();
      handle->wait(events, std::chrono::milliseconds(100));
      for (const ReplyEvent& e : events) {
        if (e.kind == ReplyEvent::Kind::text) {
          reply += e.text;
          say(e.text);
          continue;
        }
        finished = true;
        reason = e.reason;
        error = e.text;
      }
    }
    {
      std::lock_guard<std::mutex> lock(g_current_mutex);
      g_current.reset();
    }
    const bool stopped = handle->stop_requested();
    say(stopped ? " [stopped]\n" : "\n");
    if (reason == FinishReason::error) say(fmt::format("(error: {})\n", error));
    messages_.push_back({"assistant", reply});
    consumed_ = handle->consumed(0);
    const int64_t prompt = handle->prompt_tokens(), cached = handle->cached_tokens();
    const int64_t made = handle->completion_tokens(0);
    std::fprintf(stderr, "(%lld new tokens prefilled after %lld from the state; %lld tokens in %.2f s%s)\n",
                 static_cast<long long>(prompt - cached), static_cast<long long>(cached),
                 static_cast<long long>(made), timer.seconds(), reason == FinishReason::length ? ", cut at -n" : "");
  }

  void save(const std::string& name) {
    std::shared_ptr<const CacheEntry> entry = consumed_.empty() ? nullptr : s_.cache->find_exact(consumed_);
    if (!entry) {
      say("(nothing to save yet: say something first)\n");
      return;
    }
    s_.files->save(name, {entry, messages_});
    say(fmt::format("(saved {} tokens to {})\n", entry->tokens.size(), s_.files->path(name)));
  }

  void load(const std::string& name) {
    StateFile f = s_.files->load(name);
    if (!s_.cache->insert(f.entry)) fail("state '{}' is larger than the state cache (--cache-mib)", name);
    consumed_ = f.entry->tokens;
    messages_ = f.messages;
    say(fmt::format("(loaded '{}': {} tokens, {} messages)\n", name, consumed_.size(), messages_.size()));
  }

  // False to end the chat.
  bool command(const std::string& line) {
    const size_t space = line.find(' ');
    const std::string word = line.substr(0, space);
    const std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
    if (word == "/quit" || word == "/exit") return false;
    if (word == "/help") {
      say(kHelp);
    } else if (word == "/reset") {
      reset();
      say("(conversation reset)\n");
    } else if (word == "/save" || word == "/load") {
      if (arg.empty()) {
        say(fmt::format("({} needs a NAME: {} NAME)\n", word, word));
        return true;
      }
      try {
        word == "/save" ? save(arg) : load(arg);
      } catch (const Error& e) {
        say(fmt::format("(error: {})\n", e.what()));
      }
    } else {
      say(fmt::format("(unknown command {}; /help lists them)\n", word));
    }
    return true;
  }

 private:
  ServeSetup& s_;
  const ChatArgs& a_;
  const Tokenizer& tok_;
  std::vector<ChatMessage> messages_;
  std::vector<int32_t> consumed_;  // the tokens of the live state (in the cache), empty for none
};

void run_chat(ChatArgs a) {
  a.setup.parallel = 1;
  a.setup.queue = 0;
  if (a.setup.state_dir.empty()) a.setup.state_dir = ".";
  a.params.sampler.greedy = a.params.sampler.greedy || a.params.sampler.temperature == 0;
  sampler_config_validate(a.params.sampler);
  if (a.params.max_tokens < 1) fail("-n {} must be at least 1", a.params.max_tokens);
  ChatSignals signals;  // before any thread starts
  std::unique_ptr<ServeSetup> s = serve_setup(a.setup);
  Chat chat(*s, a);
  const ModelSpec& spec = s->loaded.model->spec;
  say(fmt::format("rfa chat: {} ({}, {} layers, width {}), template {}. /help lists the commands; Ctrl-C stops a "
                  "reply, Ctrl-D exits.\n",
                  s->loaded.checkpoint_dir, enum_name(spec.attention.kind), spec.L, spec.C, s->chat_template->name));
  for (;;) {
    say("> ");
    std::optional<std::string> line = line_read();
    if (!line) break;
    if (line->empty()) continue;
    if ((*line)[0] == '/') {
      if (!chat.command(*line)) break;
      continue;
    }
    chat.turn(*line);
    if (g_quit) break;
  }
  say("\n");
}

}  // namespace

void register_chat_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<ChatArgs>();
  args->setup.cache_mib = 64;
  // A conversation's earlier turns come from the live state at no cost: only what a turn adds is prefilled.
  args->setup.max_prompt_tokens = int64_t{1} << 30;
  args->params.sampler.temperature = 0.8;
  args->params.sampler.top_k = 40;
  args->params.sampler.top_p = 0.95;
  args->params.sampler.seed = 1337;
  CLI::App* cmd = app.add_subcommand("chat", "Chat with a model in the terminal (docs/serving.md)");
  serve_options_add(*cmd, args->setup, false);
  cmd->add_option("--system", args->system, "A system message that begins every conversation");
  cmd->add_option("-n,--max-tokens", args->params.max_tokens, "Most tokens per reply")
      ->capture_default_str()
      ->check(cli_integer<int64_t>(1));
  cmd->add_option("--temp,--temperature", args->params.sampler.temperature, "Sampling temperature (0 = greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", args->params.sampler.top_k, "Keep the K most likely tokens (0 = all)")
      ->capture_default_str()
      ->check(cli_integer<int>(0));
  cmd->add_option("--top-p", args->params.sampler.top_p, "Nucleus: keep the smallest set with probability >= P")
      ->capture_default_str();
  cmd->add_option("-s,--seed", args->params.sampler.seed, "Random seed")->capture_default_str();
  cmd->add_flag("--greedy", args->params.sampler.greedy, "Always take the most likely token");
  cmd->callback([args, &action] { action = [args] { run_chat(*args); }; });
}

}  // namespace rfa
