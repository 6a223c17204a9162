//! The CPU's vendor, for SIMD paths whose faster form was measured to differ between Intel and
//! AMD cores (a choice of speed only: every form computes the same result).

use std::sync::OnceLock;

/// Who made the CPU, from the vendor string of CPUID leaf 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Vendor {
    /// "GenuineIntel".
    Intel,
    /// "AuthenticAMD".
    Amd,
    /// Any other vendor string, a CPU that is not x86-64, an SGX enclave (where CPUID faults) or
    /// miri (which does not run CPUID).
    Other,
}

/// This CPU's [`Vendor`], read once and cached (CPUID leaves a virtual machine for its
/// hypervisor, microseconds each time).
///
/// # Examples
///
/// ```
/// use txgate_sync::cpu::{Vendor, vendor};
///
/// let v = vendor();
/// assert_eq!(v, vendor()); // decided once
/// if cfg!(not(target_arch = "x86_64")) {
///     assert_eq!(v, Vendor::Other);
/// }
/// ```
pub fn vendor() -> Vendor {
    static VENDOR: OnceLock<Vendor> = OnceLock::new();
    *VENDOR.get_or_init(read_vendor)
}

fn read_vendor() -> Vendor {
    #[cfg(all(target_arch = "x86_64", not(target_env = "sgx"), not(miri)))]
    {
        // SAFETY: CPUID runs on every x86-64 CPU outside an SGX enclave (excluded by the cfg),
        // and leaf 0 on every CPU with CPUID (Intel SDM, CPUID); it reads identification
        // registers and changes no state. (The intrinsic is unsafe on the minimum Rust version,
        // 1.89, and safe on later ones.)
        #[allow(unused_unsafe)]
        let leaf = unsafe { std::arch::x86_64::__cpuid(0) };
        // The vendor string's 12 bytes, in EBX, EDX, ECX order.
        let mut name = [0u8; 12];
        name[..4].copy_from_slice(&leaf.ebx.to_le_bytes());
        name[4..8].copy_from_slice(&leaf.edx.to_le_bytes());
        name[8..].copy_from_slice(&leaf.ecx.to_le_bytes());
        match &name {
            b"GenuineIntel" => Vendor::Intel,
            b"AuthenticAMD" => Vendor::Amd,
            _ => Vendor::Other,
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(target_env = "sgx"), not(miri))))]
    {
        Vendor::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vendor against the one Linux reports in /proc/cpuinfo (read independently), where
    /// that file names one (it does not under user-mode emulation of x86-64 on another
    /// architecture, whose /proc/cpuinfo is the host's).
    #[test]
    #[cfg_attr(miri, ignore = "miri reads no CPUID and isolates the file system")]
    fn the_vendor_is_the_one_the_kernel_reports() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            eprintln!("skipped: no /proc/cpuinfo on this system");
            return;
        };
        let Some(reported) = info
            .lines()
            .find_map(|l| l.strip_prefix("vendor_id"))
            .and_then(|rest| rest.split(':').nth(1))
            .map(str::trim)
        else {
            eprintln!("skipped: /proc/cpuinfo names no vendor");
            return;
        };
        let expected = match reported {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            _ => Vendor::Other,
        };
        assert_eq!(vendor(), expected, "/proc/cpuinfo says {reported:?}");
    }
}
