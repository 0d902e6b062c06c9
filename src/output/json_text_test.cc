#include "output/json_text.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace prism::output {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

TEST(JsonText, DoublesComeOutAsNlohmannDumpsThem) {
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      1.0,
                                      -1.0,
                                      0.1,
                                      1.0 / 3.0,
                                      1e-7,
                                      2.5e-5,
                                      1e15,
                                      1e16,
                                      1e21,
                                      123456.789,
                                      4.72067896,
                                      std::numeric_limits<double>::min(),
                                      std::numeric_limits<double>::max(),
                                      std::nan(""),
                                      std::numeric_limits<double>::infinity()};
  for (const double v : values) {
    std::string text;
    JsonText(&text).Double(v);
    EXPECT_EQ(text, Dump(json(v))) << v;
  }
}

TEST(JsonText, StringsAreEscapedAsNlohmannEscapesThem) {
  const std::vector<std::string> values = {
      "",          "10.0.3.5",    "fe80::1", "job-56f17e65b72b", "a\"quote",      "back\\slash",
      "tab\there", "line\nbreak", "\x01",    "caf\xc3\xa9",      "bad \xff utf8", "del\x7f"};
  for (const std::string& v : values) {
    std::string text;
    JsonText(&text).String(v);
    EXPECT_EQ(text, Dump(json(v))) << v;
  }
}

TEST(JsonText, NestedObjectsMatchTheDocumentsDump) {
  // Keys given in alphabetical order, as nlohmann's objects keep them.
  const json doc = {
      {"a", "x"},     {"b", {{"c", -3}, {"d", uint64_t{18446744073709551615u}}, {"e", {}}}},
      {"f", nullptr}, {"g", true},
      {"h", false},   {"i", json::object()},
      {"j", 0.5}};
  std::string text;
  JsonText j(&text);
  j.BeginObject();
  j.Key("a").String("x");
  j.Key("b").BeginObject();
  j.Key("c").Int(-3);
  j.Key("d").Int(uint64_t{18446744073709551615u});
  j.Key("e").Null();
  j.EndObject();
  j.Key("f").Null();
  j.Key("g").Bool(true);
  j.Key("h").Bool(false);
  j.Key("i").BeginObject().EndObject();
  j.Key("j").Double(0.5);
  j.EndObject();
  EXPECT_EQ(text, Dump(doc));
}

}  // namespace
}  // namespace prism::output
