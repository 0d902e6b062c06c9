// File: output/json_text.h
// JSON text appended straight to a string, for the report elements written by the hundred
// thousand (a 100,000-GPU window has 192,000 pairs and 102,400 timeline summaries): building an
// nlohmann document per element took about 30 heap blocks (a std::map node and a key string per
// member) and most of the report's writing time. The bytes are the ones
// nlohmann::json::dump(-1) gives for the same values: no spaces, doubles in nlohmann's shortest
// round-trip form (the number itself is formatted by nlohmann), strings escaped by nlohmann
// whenever they hold anything but plain printable ASCII. The caller gives an object's keys in
// the document's order (alphabetical, as nlohmann's std::map objects sort them);
// report_json_test.cc checks the bytes against dump.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace prism::output {

class JsonText {
 public:
  explicit JsonText(std::string* out) : out_(out) {}

  JsonText& BeginObject() {
    Separate();
    out_->push_back('{');
    first_ = true;
    return *this;
  }
  JsonText& EndObject() {
    out_->push_back('}');
    first_ = false;
    return *this;
  }
  // `key` is a name of the schema: plain ASCII, nothing to escape.
  JsonText& Key(std::string_view key) {
    Separate();
    out_->push_back('"');
    out_->append(key);
    out_->append("\":");
    after_key_ = true;
    return *this;
  }
  JsonText& String(std::string_view s) {
    Separate();
    if (IsPlain(s)) {
      out_->push_back('"');
      out_->append(s);
      out_->push_back('"');
    } else {  // quotes, backslashes, control bytes or UTF-8: nlohmann's escaping (bad UTF-8
              // replaced)
      out_->append(nlohmann::json(std::string(s))
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    return *this;
  }
  JsonText& Null() { return Raw("null"); }
  JsonText& Bool(bool b) { return Raw(b ? "true" : "false"); }
  template <typename T>
  requires std::is_integral_v<T> JsonText& Int(T v) {
    Separate();
    fmt::format_to(std::back_inserter(*out_), "{}", v);
    return *this;
  }
  // nlohmann's own formatting of the number (shortest round trip, ".0" on whole numbers, null
  // for NaN and infinities): a short string, no heap block.
  JsonText& Double(double v) { return Raw(nlohmann::json(v).dump()); }

 private:
  JsonText& Raw(std::string_view text) {
    Separate();
    out_->append(text);
    return *this;
  }
  // A comma before every member but an object's first; none between a key and its value.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_) out_->push_back(',');
    first_ = false;
  }
  static bool IsPlain(std::string_view s) {
    for (const char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') return false;
    }
    return true;
  }

  std::string* out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace prism::output
