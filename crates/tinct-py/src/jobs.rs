//! `tinct.jobs()`: a Python program as a tinct task on the `futex`
//! protocol (issue 26; docs/FORMAT.md): `for job in tinct.jobs(): ...`
//! blocks until each release (the GIL released while it waits) and ends
//! the previous job when the loop comes round; the loop ends when tinct
//! asks the program to exit. A binding of the tinct-job crate, the same
//! page and words as the C library's.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

/// The jobs tinct releases to this program, in order: iterate over it.
#[pyclass(name = "Jobs", module = "tinct._tinct", frozen)]
pub struct PyJobs {
    jobs: tinct_job::Jobs,
}

#[pymethods]
impl PyJobs {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Ends the previous job, waits for the next release and returns the
    /// job's number; stops when tinct asks the program to exit.
    fn __next__(&self, py: Python<'_>) -> Option<u64> {
        py.detach(|| self.jobs.wait())
    }

    /// Ends the current job now (before the loop comes round); False if
    /// none was open.
    fn done(&self) -> bool {
        self.jobs.done()
    }
}

/// The jobs of this program, from the page tinct named in `TINCT_JOB_FD`;
/// `OSError` when the program was not started by tinct with `protocol =
/// "futex"`.
#[pyfunction]
pub fn jobs() -> PyResult<PyJobs> {
    tinct_job::Jobs::from_env()
        .map(|jobs| PyJobs { jobs })
        .map_err(|e| PyOSError::new_err(e.to_string()))
}
