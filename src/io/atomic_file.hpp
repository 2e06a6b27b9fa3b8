// An output file that appears under its name only when complete.
//
// Writes go to a temporary file in the same folder (so the final rename stays on one file
// system and is atomic); commit() flushes, syncs and renames it over the target. If commit()
// is never reached (an error, an exception), the destructor removes the temporary file and any
// existing file under the target name is left untouched. After remove_temporaries_on_signal(),
// so does a SIGINT, SIGTERM, SIGHUP or SIGXFSZ that ends the process.
#pragma once

#include <cstdio>
#include <string>

// remove_temporaries_on_signal(), for the callers of AtomicFile.
#include "io/temporary_files.hpp"

namespace gausskl::io {

class AtomicFile {
 public:
  // Throws std::invalid_argument if the folder does not exist, std::runtime_error if the
  // temporary file cannot be created (permissions, full disk).
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  std::FILE* file() { return file_; }
  // Throws std::runtime_error if flushing, syncing or renaming fails (the temporary file is
  // removed and the target left untouched).
  void commit();

 private:
  void remove_temporary();

  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  int registration_ = -1;  // the temporary file's slot in the registry while it exists
};

}  // namespace gausskl::io
