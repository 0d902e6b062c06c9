#include "service/fabric_publisher.h"

#include <thread>

#include <fmt/format.h>

#include "diagnosis/rules/fabric_contribution_codec.h"
#include "scaleout/fabric_stream.h"

namespace prism::service {

StatusOr<std::unique_ptr<FabricPublisher>> FabricPublisher::Open(
    const FabricPublisherOptions& options) {
  auto p = std::unique_ptr<FabricPublisher>(new FabricPublisher(options));
  PRISM_ASSIGN_OR_RETURN(p->js_, scaleout::JetStream::Connect(options.url, std::chrono::seconds(5)));
  PRISM_RETURN_IF_ERROR(
      p->js_->EnsureStream(scaleout::FabricStreamSpec(options.replicas), std::chrono::seconds(30)));
  return p;
}

Status FabricPublisher::Publish(int64_t window_end_ns,
                                const diagnosis::FabricContribution& contribution) {
  const scaleout::FabricKey key{window_end_ns, options_.shard};
  const std::string bytes = diagnosis::EncodeFabricContribution(contribution);
  const std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(bytes.data()),
                                      bytes.size());
  const auto give_up = std::chrono::steady_clock::now() + options_.patience;
  while (true) {
    auto ack = js_->Publish(scaleout::FabricSubject(key), data, scaleout::FabricMessageId(key));
    if (ack) {
      ++published_;
      bytes_ += bytes.size();
      if (ack->duplicate) ++duplicates_;
      return OkStatus();
    }
    ++errors_;
    if (std::chrono::steady_clock::now() >= give_up) {
      ++given_up_;
      return MakeError(ErrorCode::kInternal, "fabric contribution of the window ending {} "
                       "({} bytes) not published: {}", window_end_ns, bytes.size(),
                       ack.error().message);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace prism::service
