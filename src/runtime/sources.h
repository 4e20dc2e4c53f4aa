// Where a load's image comes from: a chain of sources behind one interface,
// tried in order by runtime::load (loader.h). Each adds what it holds to the
// load: the image loaded whole (the warm set, another build of the same
// source), or the closure, or the image's bytes; the first to give the
// image or its bytes ends the chain, and the target's backend loads the
// bytes (backend.h). A new source is one entry of image_sources().
#pragma once

#include "core/data_model.h"
#include "image/image.h"
#include "runtime/handles.h"
#include "runtime/loader.h"
#include "storage/records.h"
#include "storage/storage.h"

#include <kiln/result.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>

namespace kiln::runtime {

/// One load as it passes the sources: what it asks for, and what the
/// sources before found for it.
struct Load {
  Load(kiln_cache& c, LoadRequest r) : cache(c), request(r) {}
  kiln_cache& cache;
  LoadRequest request;
  /// The target loaded: the request's, or the one chosen for it.
  std::string target;
  /// The cache file, once the published images did not serve the load.
  storage::Storage* storage = nullptr;

  /// Where the image is kept in the warm set (warm.h) once loaded: under
  /// (warm_name, warm_target) and the stamp of the state it was read from,
  /// taken before any read. No stamp: not kept.
  std::string warm_name, warm_target;
  std::optional<storage::DataStamp> stamp;

  Hash128 key; ///< the closure's
  std::optional<core::ClosureRecord> closure;
  std::optional<core::JobRecord> root_job; ///< its root job, where read with it
  /// How the present device's images are made where the linkers' do not
  /// run there (Backend::image_maker); its error is reported once the
  /// closure is found.
  Result<std::optional<image::Maker>> maker = std::optional<image::Maker>();

  /// The image's bytes, checked against the closure.
  std::optional<std::string> bytes;
  std::optional<Hash128> served_by; ///< the closure whose image it is, when another
  bool linked = false;              ///< made now, not read
  /// The image, where a source loaded it whole.
  std::unique_ptr<kiln_image> image;
};

/// One place an image may come from.
struct ImageSource {
  /// "published", "warm", "store", "remote", "link": for tests and messages.
  const char* name;
  /// Adds to `load` what this source holds for it, or passes; an error
  /// ends the load.
  Status (*serve)(Load& load);
};

/// The sources, in the order a load tries them: the published host images
/// (read without the cache file), the warm set, the local store, the
/// remote, and the link (or a device's own image maker).
std::span<const ImageSource> image_sources();

} // namespace kiln::runtime
