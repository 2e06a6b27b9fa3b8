// Record signatures and fixed sizes of the zip format (PKWARE APPNOTE 6.3), shared by the
// .npz reader and writer.
#pragma once

#include <cstdint>

namespace gausskl::io::zip {

inline constexpr std::uint32_t kLocalHeaderSignature = 0x04034b50;
inline constexpr std::uint32_t kCentralHeaderSignature = 0x02014b50;
inline constexpr std::uint32_t kEndSignature = 0x06054b50;
inline constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
inline constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;

inline constexpr std::uint64_t kLocalHeaderSize = 30;
inline constexpr std::uint64_t kCentralHeaderSize = 46;
inline constexpr std::uint64_t kEndSize = 22;
inline constexpr std::uint64_t kZip64EndSize = 56;
inline constexpr std::uint64_t kZip64LocatorSize = 20;
inline constexpr std::uint64_t kMaxCommentSize = 0xFFFF;

inline constexpr std::uint16_t kZip64ExtraId = 0x0001;
// A 32-bit size or offset of this value means "see the Zip64 extra field".
inline constexpr std::uint32_t kSaturated32 = 0xFFFFFFFF;
inline constexpr std::uint16_t kSaturated16 = 0xFFFF;

inline constexpr std::uint16_t kMethodStored = 0;
inline constexpr std::uint16_t kMethodDeflate = 8;
inline constexpr std::uint16_t kFlagEncrypted = 0x0001;
inline constexpr std::uint16_t kFlagUtf8Name = 0x0800;
inline constexpr std::uint16_t kVersionZip64 = 45;  // "4.5": Zip64 extensions

// Deflate emits at most 258 bytes per 2 bits (a length-258 match coded in one bit each for
// length and distance), so output is at most 1032 times the input, plus a little for tiny
// streams whose block headers are not amortised.
inline constexpr std::uint64_t kMaxDeflateRatio = 1032;
inline constexpr std::uint64_t kDeflateSlack = 1024;

}  // namespace gausskl::io::zip
