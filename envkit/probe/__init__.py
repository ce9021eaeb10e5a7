"""The numerical probe: the payload, the runner on the host or in an image, the typed report and its store."""
