"""The build stage: ``Builder`` (render + offline inputs + engine), base images, the image list."""
